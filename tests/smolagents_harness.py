"""Real smolagents agent runs, traced by OpenInference, as OTLP JSON Lines.

``openinference-instrumentation-smolagents`` traces a run as an AGENT span named
``<agent>.run`` (its ``input.value`` the ``run`` arguments, its ``output.value`` the
answer) › a CHAIN span per step › the model call (LLM) and the tools (TOOL). The model is
smolagents' ``OpenAIServerModel`` on the real ``openai`` client against
:class:`fake_openai.FakeOpenAI`. A ``ToolCallingAgent`` answers by calling its
``final_answer`` tool, so no model reply holds the answer as text; and it shows the
model the task after "New task:". A ``CodeAgent``'s model writes code (``<code>…</code>``)
that calls the tools and ``final_answer``: its replies hold code, and call no tool.

The instrumentation patches smolagents' classes process-wide, so the runs happen in a
child process: ``python smolagents_harness.py OUT_DIR`` writes one OTLP JSON Lines file
per scenario and ``expected.json``: each run as smolagents kept it in the agent's memory
(the task, the model's tool calls, what each tool returned or that it raised, the final
answer), which the rebuilt invocations must equal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent, tool
from smolagents.memory import ActionStep, PlanningStep, TaskStep

from fake_openai import MODEL, FakeOpenAI, scripted_reply
from recording import Recorder, record_scenarios, weather

#: A tool call the scripted model makes: (name, arguments, call id).
Call = tuple[str, dict[str, Any], str]
#: What each tool call returned, by call arguments (unique within a scenario).
RETURNED: dict[str, Any] = {}
#: The cities each tool call asked for, in the order the calls ran.
ASKED: list[str] = []


@tool  # type: ignore[untyped-decorator]  # smolagents is untyped
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city.
    """
    ASKED.append(city)
    RETURNED[city] = result = weather(city)
    return result


def _body(index: int, calls: Sequence[Call]) -> dict[str, Any]:
    return scripted_reply(index, None, calls, prompt_tokens=13)


def _run(turns: Sequence[Sequence[Call]], task: str) -> list[dict[str, Any]]:
    """Run a weather agent on ``task`` with the model's ``turns``; smolagents' record of it."""
    return _run_bodies([_body(i, turn) for i, turn in enumerate(turns)], task)


def _run_bodies(
    bodies: Sequence[dict[str, Any]], task: str, *, max_steps: int = 5, planning: int | None = None
) -> list[dict[str, Any]]:
    RETURNED.clear()
    with FakeOpenAI(bodies) as fake:
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="test")
        agent = ToolCallingAgent(
            tools=[get_weather],
            model=model,
            name="weather_agent",
            max_steps=max_steps,
            planning_interval=planning,
            verbosity_level=0,
        )
        answer = agent.run(task)
    return [_recorded(agent, answer)]


def _recorded(
    agent: ToolCallingAgent, answer: Any, managed: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One ``ToolCallingAgent`` run as its memory keeps it, in ``run_view``'s shape.

    ``managed`` is the answer of each managed agent the run called, by name: what the
    call returned (smolagents hands it to the manager inside its report template).
    """
    [task_step] = [s for s in agent.memory.steps if isinstance(s, TaskStep)]
    calls = []
    for step in agent.memory.steps:
        if not isinstance(step, ActionStep) or step.model_output_message is None:
            continue
        # The model's calls (a step that raised keeps none in ``tool_calls``).
        for made in step.model_output_message.tool_calls or []:
            args = made.function.arguments
            args = json.loads(args) if isinstance(args, str) else args
            if made.function.name == "final_answer":
                result, failed = args["answer"], False
            elif managed is not None and made.function.name in managed:
                result, failed = managed[made.function.name], False
            else:
                result = RETURNED.get(args["city"])
                failed = result is None and step.error is not None
            calls.append(
                {
                    "name": made.function.name,
                    "args": args,
                    "id": made.id,
                    "result": result,
                    "failed": failed,
                }
            )
    # A planning step's reply is text the agent wrote before acting, not the answer.
    plans = [
        s.model_output_message.content
        for s in agent.memory.steps
        if isinstance(s, PlanningStep) and isinstance(s.model_output_message.content, str)
    ]
    return {
        "agents": [agent.name],
        "user": task_step.task,
        "calls": calls,
        "intermediate": plans,
        "final": answer,
    }


def _code_run(replies: Sequence[str], task: str) -> list[dict[str, Any]]:
    """Run a ``CodeAgent`` on ``task`` with the model's ``replies``; smolagents' record of it.

    The calls are the tools its code ran, in order (smolagents' memory keeps each step's
    code as one ``python_interpreter`` call), then the ``final_answer`` that ended it.
    """
    RETURNED.clear()
    ASKED.clear()
    bodies = [scripted_reply(i, text, [], prompt_tokens=13) for i, text in enumerate(replies)]
    with FakeOpenAI(bodies) as fake:
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="test")
        agent = CodeAgent(
            tools=[get_weather], model=model, name="coder", max_steps=5, verbosity_level=0
        )
        answer = agent.run(task)
    [task_step] = [s for s in agent.memory.steps if isinstance(s, TaskStep)]
    calls = [
        {
            "name": "get_weather",
            "args": {"city": city},
            "id": None,
            "result": RETURNED.get(city),
            "failed": city not in RETURNED,
        }
        for city in ASKED
    ]
    final = {"name": "final_answer", "args": {"answer": answer}, "id": None, "result": answer}
    calls.append({**final, "failed": False})
    outputs = [
        s.model_output
        for s in agent.memory.steps
        if isinstance(s, ActionStep) and isinstance(s.model_output, str)
    ]
    return [
        {
            "agents": ["coder"],
            "user": task_step.task,
            "calls": calls,
            "intermediate": outputs,  # code, thoughts: none of it is the answer
            "final": answer,
        }
    ]


def code_agent() -> list[dict[str, Any]]:
    """Code that calls a tool by keyword, then ``final_answer`` by position."""
    replies = [
        'Thought: Look up Paris.\n<code>\nw = get_weather(city="Paris")\nprint(w)\n</code>',
        'Thought: Answer.\n<code>\nfinal_answer("Paris: sunny, 21 °C.")\n</code>',
    ]
    return _code_run(replies, "Weather in Paris, via code?")


def code_tool_raises() -> list[dict[str, Any]]:
    """The code's tool raises: the step fails, the model sees why and answers."""
    replies = [
        'Thought: Look up Atlantis.\n<code>\nprint(get_weather("Atlantis"))\n</code>',
        'Thought: No station.\n<code>\nfinal_answer(answer="No station in Atlantis.")\n</code>',
    ]
    return _code_run(replies, "Weather in Atlantis, via code?")


def max_steps() -> list[dict[str, Any]]:
    """The steps run out: one more model call, without tools, writes the answer as text."""
    turns: list[list[Call]] = [
        [("get_weather", {"city": "Oslo"}, "m1")],
        [("get_weather", {"city": "Bergen"}, "m2")],
    ]
    bodies = [_body(i, turn) for i, turn in enumerate(turns)]
    bodies.append(scripted_reply(2, "Oslo and Bergen: sunny.", [], prompt_tokens=13))
    return _run_bodies(bodies, "Oslo, then Bergen, at most two steps?", max_steps=2)


def sequential_tools() -> list[dict[str, Any]]:
    turns = [
        [("get_weather", {"city": "Paris"}, "c1")],
        [("get_weather", {"city": "Rome"}, "c2")],
        [("final_answer", {"answer": "Paris and Rome: sunny."}, "c3")],
    ]
    return _run(turns, "Weather in Paris, then Rome?")


def parallel_calls() -> list[dict[str, Any]]:
    turns = [
        [("get_weather", {"city": "Zürich"}, "p1"), ("get_weather", {"city": "東京"}, "p2")],
        [("final_answer", {"answer": "Both sunny."}, "p3")],
    ]
    return _run(turns, "Wetter in Zürich und 東京?")


def tool_raises() -> list[dict[str, Any]]:
    turns = [
        [("get_weather", {"city": "Atlantis"}, "e1")],
        [("final_answer", {"answer": "Atlantis has no weather station."}, "e2")],
    ]
    return _run(turns, "Weather in Atlantis?")


def unknown_tool() -> list[dict[str, Any]]:
    """The model calls a tool the agent does not have: smolagents runs nothing (no tool
    span), the step ends in ``AgentToolExecutionError`` and the model is told in a user
    message; the next step calls the right tool."""
    turns = [
        [("get_wether", {"city": "Oslo"}, "u1")],
        [("get_weather", {"city": "Paris"}, "u2")],
        [("final_answer", {"answer": "Paris: sunny."}, "u3")],
    ]
    return _run(turns, "Weather in Paris?")


def bad_arguments() -> list[dict[str, Any]]:
    """Arguments the tool's inputs refuse: smolagents runs nothing (no tool span), the
    step ends in ``AgentToolCallError``; the next call, of the same tool with its own
    arguments, is the one its tool span ran."""
    turns = [
        [("get_weather", {"town": "Oslo", "city": "Oslo"}, "b1")],
        [("get_weather", {"city": "Paris"}, "b2")],
        [("final_answer", {"answer": "Paris: sunny."}, "b3")],
    ]
    return _run(turns, "Weather in Paris?")


def direct_answer() -> list[dict[str, Any]]:
    return _run([[("final_answer", {"answer": "Bonjour ! Ça va ? 👋"}, "d1")]], "Dis bonjour.")


def planning() -> list[dict[str, Any]]:
    """``planning_interval``: a model call writes a plan before the first step."""
    bodies = [
        scripted_reply(0, "1. Look up Oslo.\n2. Answer.", [], prompt_tokens=13),
        _body(1, [("get_weather", {"city": "Oslo"}, "g1")]),
        _body(2, [("final_answer", {"answer": "Oslo: sunny."}, "g2")]),
    ]
    return _run_bodies(bodies, "Oslo weather, with a plan?", planning=5)


def _managed_run(
    bodies: list[dict[str, Any]], boss_class: type[ToolCallingAgent | CodeAgent], task: str
) -> tuple[ToolCallingAgent | CodeAgent, ToolCallingAgent, Any, str]:
    """A manager of ``boss_class`` with a managed ``researcher`` run on ``task``.

    Returns the manager, the researcher, the manager's answer and the researcher's: what
    its ``final_answer`` call returned, the step that ended its run (its manager gets it
    inside the report template).
    """
    RETURNED.clear()
    with FakeOpenAI(bodies) as fake:
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="test")
        researcher = ToolCallingAgent(
            tools=[get_weather],
            model=model,
            name="researcher",
            description="Finds the weather.",
            max_steps=5,
            verbosity_level=0,
        )
        boss = boss_class(
            tools=[], model=model, name="boss", managed_agents=[researcher], verbosity_level=0
        )
        answer = boss.run(task)
    [found] = [
        s.observations
        for s in researcher.memory.steps
        if isinstance(s, ActionStep) and s.is_final_answer
    ]
    assert isinstance(found, str)
    return boss, researcher, answer, found


def managed_agent() -> list[dict[str, Any]]:
    """A manager calls its managed agent by name, as a tool: smolagents writes no tool
    span for that call; the managed agent's run is a run of its own."""
    bodies = [
        _body(0, [("researcher", {"task": "Weather in Nice?"}, "a1")]),
        _body(1, [("get_weather", {"city": "Nice"}, "a2")]),
        _body(2, [("final_answer", {"answer": "Nice: sunny."}, "a3")]),
        _body(3, [("final_answer", {"answer": "The researcher says Nice is sunny."}, "a4")]),
    ]
    boss, researcher, answer, found = _managed_run(bodies, ToolCallingAgent, "How is Nice?")
    [report] = [s.observations for s in boss.memory.steps if isinstance(s, ActionStep)][:1]
    assert isinstance(report, str) and report.endswith(f"\n{found}")
    assert isinstance(boss, ToolCallingAgent)
    return [
        _recorded(boss, answer, managed={"researcher": found}),
        _recorded(researcher, found),
    ]


#: The task a CodeAgent manager's code gives its managed agent.
MANAGED_TASK = "Weather in Nice?"


def code_managed_agent() -> list[dict[str, Any]]:
    """A ``CodeAgent`` manager whose code calls its managed agent by name: no reply of
    the model calls it, and no tool span records the call. The call's arguments are the
    task the code gave, which the managed run's task holds inside smolagents' template."""
    code = f'Thought: Ask.\n<code>\nr = researcher(task="{MANAGED_TASK}")\nfinal_answer(r)\n</code>'
    bodies = [
        scripted_reply(0, code, [], prompt_tokens=13),
        _body(1, [("get_weather", {"city": "Nice"}, "c2")]),
        _body(2, [("final_answer", {"answer": "Nice: sunny."}, "c3")]),
    ]
    task = "How is Nice, ask the researcher?"
    boss, researcher, answer, found = _managed_run(bodies, CodeAgent, task)
    assert answer.endswith(f"\n{found}")  # the report template
    [task_step] = [s for s in boss.memory.steps if isinstance(s, TaskStep)]
    asked = {"name": "researcher", "args": {"task": MANAGED_TASK}, "id": None}
    final = {"name": "final_answer", "args": {"answer": answer}, "id": None}
    boss_run = {
        "agents": ["boss"],
        "user": task_step.task,
        "calls": [
            {**asked, "result": found, "failed": False},
            {**final, "result": answer, "failed": False},
        ],
        "intermediate": [
            s.model_output
            for s in boss.memory.steps
            if isinstance(s, ActionStep) and isinstance(s.model_output, str)
        ],
        "final": answer,
    }
    return [boss_run, _recorded(researcher, found)]


SCENARIOS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    f.__name__: f
    for f in (
        sequential_tools,
        parallel_calls,
        tool_raises,
        unknown_tool,
        bad_arguments,
        direct_answer,
        max_steps,
        code_agent,
        code_tool_raises,
        planning,
        managed_agent,
        code_managed_agent,
    )
}


def main(out_dir: Path) -> None:
    """Run every scenario; write ``<scenario>.jsonl`` (OTLP JSON) and ``expected.json``."""
    recorder = Recorder()
    SmolagentsInstrumentor().instrument(tracer_provider=recorder.provider)
    record_scenarios(recorder, SCENARIOS, out_dir)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
