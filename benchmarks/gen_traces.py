"""Generate realistic agent traces as the Collector ``file`` exporter writes them.

Output is OTLP JSON Lines (REFERENCE.md section 6): one export batch per line,
lowerCamelCase keys, hex ids, 64-bit integers as decimal strings, AnyValue wrappers.
Several agents run concurrently, so a trace's spans are spread over a few consecutive
lines and interleaved with other traces; spans are written in the order they end
(children before parents, the root last), as a BatchSpanProcessor emits them.

Trace shapes (share of agent runs):

* 50% Google ADK telemetry schema 2 with content capture:
  ``POST /run_sse`` › ``invoke_workflow`` › ``invoke_agent`` › ``generate_content``
  (``gen_ai.input.messages`` with the whole history, ``gen_ai.output.messages``,
  ``gen_ai.system_instructions``, ``gen_ai.tool.definitions``, usage) › HTTP client;
  ``execute_tool`` (``gen_ai.tool.call.*``) › sometimes a database span.
* 30% ADK legacy schema 1: ``invocation`` › ``invoke_agent`` › ``call_llm``
  (``gcp.vertex.agent.llm_request`` / ``llm_response`` JSON) › ``generate_content``
  (google-genai instrumentation) › HTTP client; ``execute_tool`` with
  ``gcp.vertex.agent.tool_call_args`` / ``tool_response``; ``execute_tool (merged)``
  after parallel calls.
* 10% pydantic-ai style plain GenAI: ``invoke_agent`` › ``chat`` / ``running tools`` ›
  ``execute_tool``.
* 10% OpenInference (LangGraph style): CHAIN / LLM / TOOL spans with flattened
  ``llm.input_messages.*`` / ``llm.output_messages.*`` attributes.

ADK runs sometimes transfer to a sub-agent; multi-turn sessions share
``gen_ai.conversation.id`` and later turns carry the earlier turns in their history.
About 3% of traces are plain HTTP health checks without any agent.

Every agent trace holds exactly one agent run, so the expected number of invocations is
the number of agent traces; it is written with the other counts to ``FILE.meta.json``.

Usage::

    python benchmarks/gen_traces.py --spans 200000 -o out/traces-200k.jsonl [--seed 7]
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

JSON = Any
Attr = dict[str, JSON]

KIND_INTERNAL, KIND_SERVER, KIND_CLIENT = 1, 2, 3
MS = 1_000_000
SEC = 1_000_000_000
EPOCH_NS = 1_777_636_800 * SEC  # 2026-05-01T12:00:00Z

CONCURRENT_AGENTS = 48
# Bump when the output changes, so cached benchmark files are regenerated.
GENERATOR_VERSION = 1
SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"

# --------------------------------------------------------------------------------------
# AnyValue attribute helpers (exactly as the Collector's JSON marshaller writes them)


def a_str(key: str, value: str) -> Attr:
    return {"key": key, "value": {"stringValue": value}}


def a_int(key: str, value: int) -> Attr:
    return {"key": key, "value": {"intValue": str(value)}}


def a_float(key: str, value: float) -> Attr:
    return {"key": key, "value": {"doubleValue": value}}


def a_bool(key: str, value: bool) -> Attr:
    return {"key": key, "value": {"boolValue": value}}


def a_strs(key: str, values: list[str]) -> Attr:
    return {"key": key, "value": {"arrayValue": {"values": [{"stringValue": v} for v in values]}}}


def dumps(obj: JSON) -> str:
    """JSON text as emitters write it into string attributes (compact)."""
    return orjson.dumps(obj).decode()


# --------------------------------------------------------------------------------------
# Text

_WORDS = (  # noqa: SIM905 - a word list reads better as prose
    "the order customer account shipment refund policy invoice payment delivery address "
    "please could you check my status update request warehouse carrier tracking number "
    "we have found your recent package was delayed because of weather conditions in the "
    "region and our team is working to resolve this issue as quickly as possible thank "
    "for patience I would like to return item that arrived damaged last week can help "
    "with replacement subscription plan billing cycle charge card expired new renewal "
    "flight hotel booking reservation itinerary departure arrival gate seat upgrade "
    "weather forecast temperature rain sunny tomorrow morning evening city airport "
    "product description price discount coupon available stock size colour model "
    "according to knowledge base article following steps should reset password email "
    "verification code security settings two factor authentication device login session "
    "agent tool result summary details information note that this will take about "
    "three five business days if you need anything else let me know happy to assist "
    "based on data retrieved from system it appears there is one open ticket related "
    "your previous conversation regarding same topic escalated specialist review"
).split()


class Text:
    """Deterministic English-looking text of a requested length."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def sentence(self, words: int) -> str:
        ws = self.rng.choices(_WORDS, k=words)
        return " ".join(ws).capitalize() + self.rng.choice((".", ".", ".", "?", "!"))

    def chars(self, lo: int, hi: int) -> str:
        target = self.rng.randint(lo, hi)
        out: list[str] = []
        size = 0
        while size < target:
            s = self.sentence(self.rng.randint(6, 18))
            out.append(s)
            size += len(s) + 1
        return " ".join(out)[:target].rstrip() + "."

    def word(self) -> str:
        return self.rng.choice(_WORDS)


# --------------------------------------------------------------------------------------
# Tools


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: dict[str, str]  # name -> JSON schema type
    required: tuple[str, ...]
    args: Callable[[random.Random, Text], dict[str, JSON]]
    result: Callable[[random.Random, Text], dict[str, JSON]]
    db: str | None = None  # SQL statement run by the tool, if any
    http: str | None = None  # downstream URL called by the tool, if any


def _oid(rng: random.Random) -> str:
    return f"ORD-{rng.randint(100000, 999999)}"


def _items(rng: random.Random, t: Text, lo: int, hi: int) -> list[dict[str, JSON]]:
    return [
        {
            "sku": f"SKU-{rng.randint(1000, 9999)}",
            "name": f"{t.word()} {t.word()}".title(),
            "qty": rng.randint(1, 3),
            "unit_price": round(rng.uniform(4, 300), 2),
        }
        for _ in range(rng.randint(lo, hi))
    ]


def _kb_hits(rng: random.Random, t: Text) -> dict[str, JSON]:
    return {
        "results": [
            {
                "id": f"kb-{rng.randint(100, 9999)}",
                "title": t.sentence(rng.randint(3, 7)),
                "snippet": t.chars(60, 360),
                "score": round(rng.uniform(0.4, 0.98), 3),
            }
            for _ in range(rng.randint(1, 5))
        ]
    }


SUPPORT_TOOLS = (
    Tool(
        "get_order_status",
        "Look up the current status, items and shipping details of a customer order.",
        {"order_id": "string"},
        ("order_id",),
        lambda r, t: {"order_id": _oid(r)},
        lambda r, t: {
            "status": r.choice(["processing", "shipped", "delayed", "delivered"]),
            "carrier": r.choice(["UPS", "DHL", "FedEx", "La Poste"]),
            "tracking_number": f"1Z{r.getrandbits(48):012X}",
            "estimated_delivery": f"2026-05-{r.randint(2, 28):02d}",
            "items": _items(r, t, 1, 8),
            "shipping_address": {"city": t.word().title(), "country": "FR", "zip": "75011"},
        },
        db="SELECT o.id, o.status, o.carrier, o.tracking FROM orders o WHERE o.id = $1",
    ),
    Tool(
        "lookup_customer",
        "Find a customer account by email address and return profile and plan.",
        {"email": "string"},
        ("email",),
        lambda r, t: {"email": f"{t.word()}.{t.word()}{r.randint(1, 99)}@example.com"},
        lambda r, t: {
            "customer_id": f"C{r.randint(10000, 99999)}",
            "name": f"{t.word().title()} {t.word().title()}",
            "plan": r.choice(["free", "plus", "business"]),
            "since": f"20{r.randint(15, 25)}-0{r.randint(1, 9)}-1{r.randint(0, 9)}",
            "open_tickets": r.randint(0, 3),
            "notes": t.chars(20, 400),
        },
        db="SELECT id, name, plan, created_at FROM customers WHERE lower(email) = lower($1)",
    ),
    Tool(
        "search_knowledge_base",
        "Search help-center articles; returns the best matching snippets.",
        {"query": "string", "top_k": "integer"},
        ("query",),
        lambda r, t: {"query": t.sentence(r.randint(3, 8)), "top_k": r.choice([3, 5])},
        _kb_hits,
        http="http://kb-search.internal:8080/v1/search",
    ),
    Tool(
        "create_ticket",
        "Open a support ticket for a human specialist.",
        {"subject": "string", "priority": "string", "body": "string"},
        ("subject", "body"),
        lambda r, t: {
            "subject": t.sentence(r.randint(4, 9)),
            "priority": r.choice(["low", "normal", "high"]),
            "body": t.chars(80, 400),
        },
        lambda r, t: {
            "ticket_id": f"T-{r.randint(10000, 99999)}",
            "status": "open",
            "queue": "tier2",
        },
        db="INSERT INTO tickets (customer_id, subject, priority, body) VALUES ($1, $2, $3, $4)",
    ),
    Tool(
        "issue_refund",
        "Refund all or part of an order to the original payment method.",
        {"order_id": "string", "amount": "number", "reason": "string"},
        ("order_id", "amount"),
        lambda r, t: {
            "order_id": _oid(r),
            "amount": round(r.uniform(5, 250), 2),
            "reason": t.sentence(r.randint(4, 10)),
        },
        lambda r, t: {
            "refund_id": f"re_{r.getrandbits(64):016x}",
            "status": r.choice(["pending", "succeeded"]),
            "amount": round(r.uniform(5, 250), 2),
            "currency": "EUR",
        },
        http="https://api.payments.example.com/v1/refunds",
    ),
)

TRAVEL_TOOLS = (
    Tool(
        "search_flights",
        "Search flights between two airports on a date.",
        {"origin": "string", "destination": "string", "date": "string"},
        ("origin", "destination", "date"),
        lambda r, t: {
            "origin": r.choice(["CDG", "LHR", "FRA", "AMS"]),
            "destination": r.choice(["JFK", "SFO", "NRT", "DXB", "BCN"]),
            "date": f"2026-06-{r.randint(1, 30):02d}",
        },
        lambda r, t: {
            "flights": [
                {
                    "flight": f"{r.choice(['AF', 'BA', 'LH', 'KL'])}{r.randint(100, 999)}",
                    "depart": f"{r.randint(6, 22):02d}:{r.choice(['00', '15', '30', '45'])}",
                    "duration_min": r.randint(90, 780),
                    "stops": r.randint(0, 1),
                    "price": {"amount": r.randint(180, 1900), "currency": "EUR"},
                    "fare_class": r.choice(["economy", "premium", "business"]),
                }
                for _ in range(r.randint(1, 9))
            ]
        },
        http="https://api.flights.example.com/v2/offers",
    ),
    Tool(
        "get_weather",
        "Weather forecast for a city and date.",
        {"city": "string", "date": "string"},
        ("city",),
        lambda r, t: {
            "city": r.choice(["Paris", "Tokyo", "New York", "Barcelona"]),
            "date": "2026-06-12",
        },
        lambda r, t: {
            "forecast": [
                {"hour": h, "temp_c": r.randint(8, 31), "precip_mm": round(r.uniform(0, 4), 1)}
                for h in range(0, 24, r.choice([3, 6]))
            ],
            "summary": t.chars(40, 160),
        },
        http="https://api.weather.example.com/forecast",
    ),
    Tool(
        "book_hotel",
        "Reserve a hotel room.",
        {"hotel_id": "string", "check_in": "string", "nights": "integer", "guests": "integer"},
        ("hotel_id", "check_in", "nights"),
        lambda r, t: {
            "hotel_id": f"H{r.randint(1000, 9999)}",
            "check_in": f"2026-06-{r.randint(1, 28):02d}",
            "nights": r.randint(1, 7),
            "guests": r.randint(1, 4),
        },
        lambda r, t: {
            "confirmation": f"BK{r.getrandbits(40):010X}",
            "total": {"amount": r.randint(120, 2400), "currency": "EUR"},
            "cancellation_policy": t.chars(80, 300),
        },
        db="INSERT INTO reservations (hotel_id, check_in, nights, guests) VALUES ($1, $2, $3, $4)",
    ),
    Tool(
        "convert_currency",
        "Convert an amount between currencies at today's rate.",
        {"amount": "number", "from": "string", "to": "string"},
        ("amount", "from", "to"),
        lambda r, t: {
            "amount": r.randint(10, 5000),
            "from": "EUR",
            "to": r.choice(["USD", "JPY", "GBP"]),
        },
        lambda r, t: {
            "rate": round(r.uniform(0.8, 160), 4),
            "converted": round(r.uniform(10, 9000), 2),
        },
    ),
)


def tool_schema(tool: Tool, *, gemini: bool) -> dict[str, JSON]:
    props = {
        k: {"type": v.upper() if gemini else v, "description": f"The {k.replace('_', ' ')}."}
        for k, v in tool.params.items()
    }
    return {
        "type": "OBJECT" if gemini else "object",
        "properties": props,
        "required": list(tool.required),
    }


TRANSFER_TOOL = Tool(
    "transfer_to_agent",
    "Transfer the question to another agent.",
    {"agent_name": "string"},
    ("agent_name",),
    lambda r, t: {},
    lambda r, t: {},
)


# --------------------------------------------------------------------------------------
# Services (resources) and scopes


@dataclass
class Service:
    shape: str
    resource: list[Attr]
    agent: str
    sub_agent: str | None
    model: str
    tools: tuple[Tool, ...]
    system: str
    route: str


SCOPES: dict[str, dict[str, str]] = {
    "adk2": {"name": "gcp.vertex.agent", "version": "2.13.0"},
    "adk1": {"name": "gcp.vertex.agent", "version": "1.15.1"},
    "fastapi": {"name": "opentelemetry.instrumentation.fastapi", "version": "0.59b0"},
    "httpx": {"name": "opentelemetry.instrumentation.httpx", "version": "0.59b0"},
    "asyncpg": {"name": "opentelemetry.instrumentation.asyncpg", "version": "0.59b0"},
    "genai": {"name": "opentelemetry.instrumentation.google_genai", "version": "0.4b0"},
    "pydantic": {"name": "pydantic-ai", "version": "1.0.10"},
    "openinference": {"name": "openinference.instrumentation.langchain", "version": "0.1.50"},
}


def _resource(rng: random.Random, name: str, version: str, sdk: str) -> list[Attr]:
    return [
        a_str("service.name", name),
        a_str("service.version", version),
        a_str("service.namespace", "agents"),
        a_str("service.instance.id", str(uuid.UUID(int=rng.getrandbits(128), version=4))),
        a_str("deployment.environment.name", "production"),
        a_str("telemetry.sdk.language", "python"),
        a_str("telemetry.sdk.name", "opentelemetry"),
        a_str("telemetry.sdk.version", sdk),
        a_str("process.runtime.name", "cpython"),
        a_str("process.runtime.version", "3.12.7"),
        a_int("process.pid", rng.randint(7, 65000)),
        a_str("host.name", f"{name}-{rng.getrandbits(32):08x}-{rng.getrandbits(20):05x}"),
        a_str("cloud.provider", "gcp"),
        a_str("cloud.platform", "gcp_cloud_run"),
        a_str("cloud.region", "europe-west1"),
    ]


def make_services(rng: random.Random, text: Text) -> dict[str, list[Service]]:
    def system(role: str) -> str:
        return f"You are {role}. " + text.chars(1000, 2000)

    services: dict[str, list[Service]] = {}
    for shape, name, agent, sub, model, tools, route in (
        (
            "adk2",
            "support-agent",
            "support_router",
            "billing_agent",
            "gemini-2.5-flash",
            SUPPORT_TOOLS,
            "/run_sse",
        ),
        (
            "adk1",
            "travel-agent",
            "travel_planner",
            "booking_agent",
            "gemini-2.0-flash",
            TRAVEL_TOOLS,
            "/run",
        ),
        (
            "pydantic",
            "billing-assistant",
            "billing_assistant",
            None,
            "gpt-4o-2024-08-06",
            SUPPORT_TOOLS,
            "/chat",
        ),
        (
            "openinference",
            "faq-bot",
            "faq_graph",
            None,
            "gpt-4o-mini",
            SUPPORT_TOOLS[1:4],
            "/invoke",
        ),
    ):
        sysmsg = system(f"the {agent.replace('_', ' ')} of ACME's customer service")
        services[shape] = [
            Service(
                shape=shape,
                resource=_resource(
                    rng, name, f"1.{rng.randint(0, 9)}.{rng.randint(0, 20)}", "1.38.0"
                ),
                agent=agent,
                sub_agent=sub,
                model=model,
                tools=tools,
                system=sysmsg,
                route=route,
            )
            for _ in range(2)  # two replicas: two resources per service
        ]
    return services


# --------------------------------------------------------------------------------------
# A run's script, independent of how it is encoded


@dataclass
class Call:
    tool: Tool
    args: dict[str, JSON]
    result: dict[str, JSON]
    error: str | None
    index: int  # position within the model response
    adk_id: str


@dataclass
class ModelTurn:
    agent: str
    text: str | None
    calls: list[Call]


@dataclass
class Script:
    user: str
    turns: list[ModelTurn]  # model responses in order; the last has text and no call


# Generic history items: ("user", text) | ("model", ModelTurn) | ("tool", [Call])
History = list[tuple[str, Any]]


def make_script(rng: random.Random, text: Text, svc: Service) -> Script:
    user = text.chars(50, 300)
    n_tools = rng.choices((1, 2, 3, 4), weights=(35, 30, 20, 15))[0]
    turns: list[ModelTurn] = []
    agent = svc.agent
    if svc.sub_agent and rng.random() < 0.15:
        call = Call(
            TRANSFER_TOOL, {"agent_name": svc.sub_agent}, {"result": None}, None, 0, _adk_id(rng)
        )
        turns.append(ModelTurn(agent, None, [call]))
        agent = svc.sub_agent
    remaining = n_tools
    while remaining:
        k = 2 if remaining >= 2 and rng.random() < 0.25 else 1  # parallel calls
        if k == 2 and remaining >= 3 and rng.random() < 0.3:
            k = 3
        calls = []
        for i in range(k):
            tool = rng.choice(svc.tools)
            error = None
            if rng.random() < 0.04:
                error = rng.choice(["TimeoutError", "HTTPStatusError", "ValueError"])
                result = {"error": f"{error}: " + text.sentence(rng.randint(5, 12))}
            else:
                result = tool.result(rng, text)
            calls.append(Call(tool, tool.args(rng, text), result, error, i, _adk_id(rng)))
        thought = text.chars(40, 200) if rng.random() < 0.2 else None
        turns.append(ModelTurn(agent, thought, calls))
        remaining -= k
    turns.append(ModelTurn(agent, text.chars(200, 800), []))
    return Script(user, turns)


def _adk_id(rng: random.Random) -> str:
    return f"adk-{uuid.UUID(int=rng.getrandbits(128), version=4)}"


# --------------------------------------------------------------------------------------
# Message encoders


def genai_messages(history: History, *, result_key: str = "response") -> list[JSON]:
    """OTel GenAI semconv input messages (ADK schema 2, pydantic-ai)."""
    out: list[JSON] = []
    for kind, item in history:
        if kind == "user":
            out.append({"role": "user", "parts": [{"type": "text", "content": item}]})
        elif kind == "model":
            out.append({"role": "assistant", "parts": genai_parts(item)})
        else:
            out.append(
                {
                    "role": "tool",
                    "parts": [
                        {
                            "type": "tool_call_response",
                            "id": f"{c.tool.name}_{c.index}",
                            result_key: c.result,
                        }
                        for c in item
                    ],
                }
            )
    return out


def genai_parts(turn: ModelTurn) -> list[JSON]:
    parts: list[JSON] = []
    if turn.text:
        parts.append({"type": "text", "content": turn.text})
    for c in turn.calls:
        parts.append(
            {
                "type": "tool_call",
                "id": f"{c.tool.name}_{c.index}",
                "name": c.tool.name,
                "arguments": c.args,
            }
        )
    return parts


def gemini_contents(history: History) -> list[JSON]:
    """Gemini ``Content`` history (ADK legacy ``llm_request.contents``)."""
    out: list[JSON] = []
    for kind, item in history:
        if kind == "user":
            out.append({"parts": [{"text": item}], "role": "user"})
        elif kind == "model":
            out.append({"parts": gemini_parts(item), "role": "model"})
        else:
            out.append(
                {
                    "parts": [
                        {
                            "function_response": {
                                "id": c.adk_id,
                                "name": c.tool.name,
                                "response": c.result,
                            }
                        }
                        for c in item
                    ],
                    "role": "user",
                }
            )
    return out


def gemini_parts(turn: ModelTurn) -> list[JSON]:
    parts: list[JSON] = []
    if turn.text:
        parts.append({"text": turn.text})
    for c in turn.calls:
        parts.append({"function_call": {"id": c.adk_id, "args": c.args, "name": c.tool.name}})
    return parts


def openai_messages(system: str, history: History) -> list[JSON]:
    out: list[JSON] = [{"role": "system", "content": system}]
    for kind, item in history:
        if kind == "user":
            out.append({"role": "user", "content": item})
        elif kind == "model":
            msg: dict[str, JSON] = {"role": "assistant", "content": item.text or ""}
            if item.calls:
                msg["tool_calls"] = [
                    {
                        "id": _call_id(c),
                        "type": "function",
                        "function": {"name": c.tool.name, "arguments": dumps(c.args)},
                    }
                    for c in item.calls
                ]
            out.append(msg)
        else:
            for c in item:
                out.append(
                    {"role": "tool", "tool_call_id": _call_id(c), "content": dumps(c.result)}
                )
    return out


def _call_id(c: Call) -> str:
    return "call_" + c.adk_id[4:28].replace("-", "")


def tokens(s: str) -> int:
    return max(1, len(s) // 4)


# --------------------------------------------------------------------------------------
# Span building


@dataclass
class TraceOut:
    trace_id: str
    service: int  # index of the resource
    shape: str  # also the scope key of its tool spans
    spans: list[tuple[int, int, str, dict[str, JSON]]] = field(default_factory=list)
    # (end_ns, seq, scope key, span)


class Gen:
    """Builds traces; all randomness from one seeded ``random.Random``."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.text = Text(self.rng)
        self.services = make_services(self.rng, self.text)
        self.resources: list[list[Attr]] = []
        self._res_index: dict[int, int] = {}
        for group in self.services.values():
            for svc in group:
                self._res_index[id(svc)] = len(self.resources)
                self.resources.append(svc.resource)
        self.seq = 0
        self.counts: dict[str, int] = {}
        # Tool definitions are fixed per service: encode them once, as emitters do.
        self._tooldefs: dict[int, str] = {}

    # ids and span records -------------------------------------------------------------

    def span_id(self) -> str:
        return f"{self.rng.getrandbits(64):016x}"

    def add(
        self,
        tr: TraceOut,
        scope: str,
        name: str,
        kind: int,
        span_id: str,
        parent: str | None,
        start: int,
        end: int,
        attrs: list[Attr],
        *,
        error: str | None = None,
        events: list[JSON] | None = None,
    ) -> None:
        span: dict[str, JSON] = {"traceId": tr.trace_id, "spanId": span_id}
        if parent:
            span["parentSpanId"] = parent
        span["flags"] = 256
        span["name"] = name
        span["kind"] = kind
        span["startTimeUnixNano"] = str(start)
        span["endTimeUnixNano"] = str(end)
        if attrs:
            span["attributes"] = attrs
        if events:
            span["events"] = events
        span["status"] = {"code": 2, "message": error} if error else {}
        self.seq += 1
        tr.spans.append((end, self.seq, scope, span))

    def http_client(
        self,
        tr: TraceOut,
        parent: str,
        start: int,
        end: int,
        url: str,
        method: str = "POST",
        status: int = 200,
    ) -> None:
        host = url.split("/", 3)[2].split(":", 1)[0]
        self.add(
            tr,
            "httpx",
            method,
            KIND_CLIENT,
            self.span_id(),
            parent,
            start,
            end,
            [
                a_str("http.request.method", method),
                a_str("url.full", url),
                a_str("server.address", host),
                a_int("server.port", 443 if url.startswith("https") else 8080),
                a_str("network.protocol.version", "1.1"),
                a_int("http.response.status_code", status),
            ],
        )

    def db_span(self, tr: TraceOut, parent: str, start: int, end: int, sql: str) -> None:
        op = sql.split(maxsplit=1)[0]
        table = sql.split(" FROM " if " FROM " in sql else " INTO ", 1)[1].split(maxsplit=1)[0]
        self.add(
            tr,
            "asyncpg",
            f"{op} {table}",
            KIND_CLIENT,
            self.span_id(),
            parent,
            start,
            end,
            [
                a_str("db.system.name", "postgresql"),
                a_str("db.namespace", "app"),
                a_str("db.operation.name", op),
                a_str("db.collection.name", table),
                a_str("db.query.text", sql),
                a_str("server.address", "10.20.0.5"),
                a_int("server.port", 5432),
            ],
        )

    def http_server(
        self,
        tr: TraceOut,
        span_id: str,
        start: int,
        end: int,
        route: str,
        method: str = "POST",
        status: int = 200,
    ) -> None:
        self.add(
            tr,
            "fastapi",
            f"{method} {route}",
            KIND_SERVER,
            span_id,
            None,
            start,
            end,
            [
                a_str("http.request.method", method),
                a_str("url.scheme", "https"),
                a_str("url.path", route),
                a_str("http.route", route),
                a_str("server.address", "agents.example.com"),
                a_str("network.protocol.version", "1.1"),
                a_str("client.address", self.ipv4()),
                a_str("user_agent.original", "python-httpx/0.28.1"),
                a_int("http.response.status_code", status),
            ],
        )

    def ipv4(self) -> str:
        a, b, c = self.rng.randint(0, 255), self.rng.randint(0, 255), self.rng.randint(1, 254)
        return f"10.{a}.{b}.{c}"

    def dur(self, lo_ms: float, hi_ms: float) -> int:
        return int(self.rng.uniform(lo_ms, hi_ms) * MS)

    def tool_exec(
        self, tr: TraceOut, parent: str, start: int, call: Call, attrs: Callable[[Call], list[Attr]]
    ) -> int:
        """One tool span (+ its downstream db/http span); returns its end."""
        sid = self.span_id()
        body_start = start + self.dur(0.05, 0.4)
        body_end = body_start + self.dur(15, 900)
        if call.tool.db:
            self.db_span(tr, sid, body_start, body_end, call.tool.db)
        elif call.tool.http:
            self.http_client(
                tr, sid, body_start, body_end, call.tool.http, status=503 if call.error else 200
            )
        end = body_end + self.dur(0.05, 0.6)
        events = None
        if call.error:
            events = [
                {
                    "timeUnixNano": str(end - 20_000),
                    "name": "exception",
                    "attributes": [
                        a_str("exception.type", call.error),
                        a_str("exception.message", call.result["error"]),
                        a_str(
                            "exception.stacktrace",
                            'Traceback (most recent call last):\n  File "/app/tools.py", '
                            f"line {self.rng.randint(20, 400)}, in {call.tool.name}\n"
                            f"{call.result['error']}",
                        ),
                        a_bool("exception.escaped", False),
                    ],
                }
            ]
        # OpenInference (LangChain) names a tool span after the tool; the others after the op.
        name = call.tool.name if tr.shape == "openinference" else f"execute_tool {call.tool.name}"
        self.add(
            tr,
            tr.shape,
            name,
            KIND_INTERNAL,
            sid,
            parent,
            start,
            end,
            attrs(call),
            error=call.error,
            events=events,
        )
        return end

    def tool_round(
        self,
        tr: TraceOut,
        parent: str,
        start: int,
        calls: list[Call],
        attrs: Callable[[Call], list[Attr]],
    ) -> int:
        """Sequential, or concurrent when the model asked for several calls at once."""
        if len(calls) == 1:
            return self.tool_exec(tr, parent, start, calls[0], attrs)
        ends = [self.tool_exec(tr, parent, start + self.dur(0.01, 0.3), c, attrs) for c in calls]
        return max(ends)

    # shapes ---------------------------------------------------------------------------

    def trace(self, start: int, svc: Service, conv_id: str, history: History) -> TraceOut:
        tr = TraceOut(
            trace_id=f"{self.rng.getrandbits(128):032x}",
            service=self._res_index[id(svc)],
            shape=svc.shape,
        )
        script = make_script(self.rng, self.text, svc)
        build = {
            "adk2": self.adk_v2,
            "adk1": self.adk_v1,
            "pydantic": self.pydantic,
            "openinference": self.openinference,
        }[svc.shape]
        http_id = self.span_id()
        body_start = start + self.dur(0.3, 2)
        body_end = build(tr, svc, script, conv_id, history, http_id, body_start)
        self.http_server(tr, http_id, start, body_end + self.dur(0.2, 3), svc.route)
        # the run's messages become history for the session's next turn
        history.append(("user", script.user))
        for turn in script.turns:
            history.append(("model", turn))
            if turn.calls:
                history.append(("tool", turn.calls))
        return tr

    def health(self, start: int, svc: Service) -> TraceOut:
        tr = TraceOut(
            trace_id=f"{self.rng.getrandbits(128):032x}",
            service=self._res_index[id(svc)],
            shape="health",
        )
        sid = self.span_id()
        t1 = start + self.dur(0.1, 0.5)
        t2 = t1 + self.dur(0.5, 4)
        self.db_span(tr, sid, t1, t2, "SELECT 1 FROM pg_catalog.pg_tables LIMIT 1")
        self.http_server(tr, sid, start, t2 + self.dur(0.1, 1), "/healthz", method="GET")
        return tr

    def _model_latency(self, out_chars: int) -> int:
        return self.dur(350, 1400) + out_chars * self.rng.randint(8, 20) * 1000

    def adk_v2(
        self,
        tr: TraceOut,
        svc: Service,
        sc: Script,
        conv: str,
        history: History,
        parent: str,
        start: int,
    ) -> int:
        inv_id = f"e-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"
        wf_id, root_agent_id = self.span_id(), self.span_id()
        tooldefs = self._tooldefs.get(id(svc))
        if tooldefs is None:
            tooldefs = dumps(
                [
                    {
                        "type": "function",
                        "name": t.name,
                        "description": t.description,
                        "parameters": tool_schema(t, gemini=False),
                    }
                    for t in (*svc.tools, TRANSFER_TOOL)
                ]
            )
            self._tooldefs[id(svc)] = tooldefs
        system = dumps([{"type": "text", "content": svc.system}])
        hist: History = [*history, ("user", sc.user)]
        agent_start = start + self.dur(0.1, 0.5)
        t = agent_start + self.dur(0.5, 3)
        sub_id: str | None = None
        sub_start = 0
        cur_parent = root_agent_id

        def tool_attrs(c: Call) -> list[Attr]:
            return [
                a_str("gen_ai.operation.name", "execute_tool"),
                a_str("gen_ai.tool.name", c.tool.name),
                a_str("gen_ai.tool.description", c.tool.description),
                a_str("gen_ai.tool.type", "FunctionTool"),
                a_str("gen_ai.tool.call.id", c.adk_id),
                a_str("gen_ai.tool.call.arguments", dumps(c.args)),
                a_str("gen_ai.tool.call.result", dumps(c.result)),
                a_str("gen_ai.agent.name", agent_of[0]),
                a_str("gen_ai.conversation.id", conv),
                a_str("gcp.vertex.agent.invocation_id", inv_id),
                a_str("gcp.vertex.agent.event_id", str(uuid.UUID(int=self.rng.getrandbits(128)))),
            ] + ([a_str("error.type", c.error)] if c.error else [])

        agent_of = [svc.agent]
        for turn in sc.turns:
            if turn.agent != svc.agent and sub_id is None:
                sub_id, sub_start = self.span_id(), t
                cur_parent = sub_id
                t += self.dur(0.1, 0.5)
                agent_of[0] = turn.agent
            in_msgs = dumps(genai_messages(hist))
            out_msgs = dumps(
                [{"role": "assistant", "parts": genai_parts(turn), "finish_reason": "stop"}]
            )
            gid = self.span_id()
            gend = t + self._model_latency(len(out_msgs))
            self.http_client(
                tr,
                gid,
                t + self.dur(1, 4),
                gend - self.dur(0.3, 2),
                f"https://generativelanguage.googleapis.com/v1beta/models/"
                f"{svc.model}:streamGenerateContent?alt=sse",
            )
            self.add(
                tr,
                "adk2",
                f"generate_content {svc.model}",
                KIND_CLIENT,
                gid,
                cur_parent,
                t,
                gend,
                [
                    a_str("gen_ai.operation.name", "generate_content"),
                    a_str("gen_ai.provider.name", "gcp.gemini"),
                    a_str("gen_ai.agent.name", turn.agent),
                    a_str("gen_ai.conversation.id", conv),
                    a_str("gcp.vertex.agent.invocation_id", inv_id),
                    a_str(
                        "gcp.vertex.agent.event_id", str(uuid.UUID(int=self.rng.getrandbits(128)))
                    ),
                    a_str("gen_ai.request.model", svc.model),
                    a_str("gen_ai.response.model", svc.model),
                    a_float("gen_ai.request.temperature", 0.2),
                    a_int("gen_ai.request.max_tokens", 8192),
                    a_strs("gen_ai.response.finish_reasons", ["stop"]),
                    a_int(
                        "gen_ai.usage.input_tokens",
                        tokens(in_msgs) + tokens(svc.system) + tokens(tooldefs),
                    ),
                    a_int("gen_ai.usage.output_tokens", tokens(out_msgs)),
                    a_str("gen_ai.system_instructions", system),
                    a_str("gen_ai.tool.definitions", tooldefs),
                    a_str("gen_ai.input.messages", in_msgs),
                    a_str("gen_ai.output.messages", out_msgs),
                ],
            )
            t = gend + self.dur(0.2, 2)
            hist.append(("model", turn))
            if turn.calls:
                t = self.tool_round(tr, cur_parent, t, turn.calls, tool_attrs) + self.dur(0.2, 1)
                hist.append(("tool", turn.calls))
        if sub_id is not None:
            t += self.dur(0.1, 0.4)
            self.add(
                tr,
                "adk2",
                f"invoke_agent {svc.sub_agent}",
                KIND_INTERNAL,
                sub_id,
                root_agent_id,
                sub_start,
                t,
                [
                    a_str("gen_ai.operation.name", "invoke_agent"),
                    a_str("gen_ai.agent.name", str(svc.sub_agent)),
                    a_str("gen_ai.agent.description", "Handles billing questions."),
                    a_str("gen_ai.conversation.id", conv),
                ],
            )
        t += self.dur(0.1, 0.4)
        self.add(
            tr,
            "adk2",
            f"invoke_agent {svc.agent}",
            KIND_INTERNAL,
            root_agent_id,
            wf_id,
            agent_start,
            t,
            [
                a_str("gen_ai.operation.name", "invoke_agent"),
                a_str("gen_ai.agent.name", svc.agent),
                a_str("gen_ai.agent.description", "Routes customer questions."),
                a_str("gen_ai.conversation.id", conv),
            ],
        )
        t += self.dur(0.05, 0.3)
        self.add(
            tr,
            "adk2",
            f"invoke_workflow {svc.agent}",
            KIND_INTERNAL,
            wf_id,
            parent,
            start,
            t,
            [
                a_str("gen_ai.operation.name", "invoke_workflow"),
                a_str("gen_ai.workflow.name", svc.agent),
                a_str("gen_ai.conversation.id", conv),
                a_str("gcp.vertex.agent.invocation_id", inv_id),
            ],
        )
        return t

    def adk_v1(
        self,
        tr: TraceOut,
        svc: Service,
        sc: Script,
        conv: str,
        history: History,
        parent: str,
        start: int,
    ) -> int:
        inv_id = f"e-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"
        inv_span, root_agent_id = self.span_id(), self.span_id()
        tools_cfg = [
            {
                "function_declarations": [
                    {
                        "name": t.name,
                        "description": t.description,
                        "parameters": tool_schema(t, gemini=True),
                    }
                    for t in (*svc.tools, TRANSFER_TOOL)
                ]
            }
        ]
        hist: History = [*history, ("user", sc.user)]
        agent_start = start + self.dur(0.1, 0.5)
        t = agent_start + self.dur(0.5, 3)
        sub_id: str | None = None
        sub_start = 0
        cur_parent = root_agent_id

        def tool_attrs(c: Call) -> list[Attr]:
            return [
                a_str("gen_ai.operation.name", "execute_tool"),
                a_str("gen_ai.tool.name", c.tool.name),
                a_str("gen_ai.tool.description", c.tool.description),
                a_str("gen_ai.tool.type", "FunctionTool"),
                a_str("gen_ai.tool.call.id", c.adk_id),
                a_str("gcp.vertex.agent.tool_call_args", dumps(c.args)),
                a_str("gcp.vertex.agent.event_id", str(uuid.UUID(int=self.rng.getrandbits(128)))),
                a_str("gcp.vertex.agent.tool_response", dumps(c.result)),
                a_str("gcp.vertex.agent.llm_request", "{}"),
                a_str("gcp.vertex.agent.llm_response", "{}"),
            ] + ([a_str("error.type", c.error)] if c.error else [])

        for turn in sc.turns:
            if turn.agent != svc.agent and sub_id is None:
                sub_id, sub_start = self.span_id(), t
                cur_parent = sub_id
                t += self.dur(0.1, 0.5)
            request = dumps(
                {
                    "model": svc.model,
                    "config": {"system_instruction": svc.system, "tools": tools_cfg},
                    "contents": gemini_contents(hist),
                }
            )
            response_content = {"parts": gemini_parts(turn), "role": "model"}
            in_tok, out_tok = tokens(request), tokens(dumps(response_content))
            response = dumps(
                {
                    "content": response_content,
                    "finish_reason": "STOP",
                    "usage_metadata": {
                        "candidates_token_count": out_tok,
                        "prompt_token_count": in_tok,
                        "total_token_count": in_tok + out_tok,
                    },
                }
            )
            cid, gid = self.span_id(), self.span_id()
            g_start = t + self.dur(0.5, 3)
            g_end = g_start + self._model_latency(len(response))
            self.http_client(
                tr,
                gid,
                g_start + self.dur(0.5, 2),
                g_end - self.dur(0.2, 1),
                f"https://generativelanguage.googleapis.com/v1beta/models/"
                f"{svc.model}:generateContent",
            )
            self.add(
                tr,
                "genai",
                f"generate_content {svc.model}",
                KIND_CLIENT,
                gid,
                cid,
                g_start,
                g_end,
                [
                    a_str("code.function.name", "google.genai.Models.generate_content"),
                    a_str("gen_ai.operation.name", "generate_content"),
                    a_str("gen_ai.system", "gemini"),
                    a_str("gen_ai.request.model", svc.model),
                    a_str("gen_ai.response.model", svc.model),
                    a_int("gen_ai.usage.input_tokens", in_tok),
                    a_int("gen_ai.usage.output_tokens", out_tok),
                    a_strs("gen_ai.response.finish_reasons", ["stop"]),
                ],
            )
            c_end = g_end + self.dur(0.5, 3)
            self.add(
                tr,
                "adk1",
                "call_llm",
                KIND_INTERNAL,
                cid,
                cur_parent,
                t,
                c_end,
                [
                    a_str("gen_ai.system", "gcp.vertex.agent"),
                    a_str("gen_ai.request.model", svc.model),
                    a_str("gcp.vertex.agent.invocation_id", inv_id),
                    a_str("gcp.vertex.agent.session_id", conv),
                    a_str(
                        "gcp.vertex.agent.event_id", str(uuid.UUID(int=self.rng.getrandbits(128)))
                    ),
                    a_str("gcp.vertex.agent.llm_request", request),
                    a_str("gcp.vertex.agent.llm_response", response),
                    a_float("gen_ai.request.top_p", 0.95),
                    a_int("gen_ai.request.max_tokens", 8192),
                    a_int("gen_ai.usage.input_tokens", in_tok),
                    a_int("gen_ai.usage.output_tokens", out_tok),
                    a_strs("gen_ai.response.finish_reasons", ["stop"]),
                ],
            )
            t = c_end + self.dur(0.2, 2)
            hist.append(("model", turn))
            if turn.calls:
                t = self.tool_round(tr, cur_parent, t, turn.calls, tool_attrs)
                if len(turn.calls) > 1:
                    merged_end = t + self.dur(0.1, 0.5)
                    self.add(
                        tr,
                        "adk1",
                        "execute_tool (merged)",
                        KIND_INTERNAL,
                        self.span_id(),
                        cur_parent,
                        t,
                        merged_end,
                        [
                            a_str("gen_ai.operation.name", "execute_tool"),
                            a_str("gen_ai.tool.name", "(merged tools)"),
                            a_str("gen_ai.tool.description", "(merged tools)"),
                            a_str(
                                "gen_ai.tool.call.id", str(uuid.UUID(int=self.rng.getrandbits(128)))
                            ),
                            a_str("gcp.vertex.agent.tool_call_args", "N/A"),
                            a_str(
                                "gcp.vertex.agent.event_id",
                                str(uuid.UUID(int=self.rng.getrandbits(128))),
                            ),
                            a_str(
                                "gcp.vertex.agent.tool_response",
                                dumps(
                                    {
                                        "parts": [
                                            {
                                                "function_response": {
                                                    "id": c.adk_id,
                                                    "name": c.tool.name,
                                                    "response": c.result,
                                                }
                                            }
                                            for c in turn.calls
                                        ],
                                        "role": "user",
                                    }
                                ),
                            ),
                            a_str("gcp.vertex.agent.llm_request", "{}"),
                            a_str("gcp.vertex.agent.llm_response", "{}"),
                        ],
                    )
                    t = merged_end
                t += self.dur(0.2, 1)
                hist.append(("tool", turn.calls))
        if sub_id is not None:
            t += self.dur(0.1, 0.4)
            self.add(
                tr,
                "adk1",
                f"invoke_agent {svc.sub_agent}",
                KIND_INTERNAL,
                sub_id,
                root_agent_id,
                sub_start,
                t,
                [
                    a_str("gen_ai.operation.name", "invoke_agent"),
                    a_str("gen_ai.agent.name", str(svc.sub_agent)),
                    a_str("gen_ai.agent.description", "Books hotels and flights."),
                    a_str("gen_ai.conversation.id", conv),
                ],
            )
        t += self.dur(0.1, 0.4)
        self.add(
            tr,
            "adk1",
            f"invoke_agent {svc.agent}",
            KIND_INTERNAL,
            root_agent_id,
            inv_span,
            agent_start,
            t,
            [
                a_str("gen_ai.operation.name", "invoke_agent"),
                a_str("gen_ai.agent.name", svc.agent),
                a_str("gen_ai.agent.description", "Plans trips end to end."),
                a_str("gen_ai.conversation.id", conv),
            ],
        )
        t += self.dur(0.05, 0.3)
        self.add(tr, "adk1", "invocation", KIND_INTERNAL, inv_span, parent, start, t, [])
        return t

    def pydantic(
        self,
        tr: TraceOut,
        svc: Service,
        sc: Script,
        conv: str,
        history: History,
        parent: str,
        start: int,
    ) -> int:
        agent_id = self.span_id()
        system = dumps([{"type": "text", "content": svc.system}])
        hist: History = [*history, ("user", sc.user)]
        t = start + self.dur(0.5, 2)
        usage_in = usage_out = 0
        params = dumps(
            {
                "function_tools": [
                    {
                        "name": tl.name,
                        "description": tl.description,
                        "parameters_json_schema": tool_schema(tl, gemini=False),
                    }
                    for tl in svc.tools
                ],
                "output_mode": "text",
                "allow_text_output": True,
            }
        )

        def tool_attrs(c: Call) -> list[Attr]:
            return [
                a_str("gen_ai.operation.name", "execute_tool"),
                a_str("gen_ai.tool.name", c.tool.name),
                a_str("gen_ai.tool.call.id", _call_id(c)),
                a_str("gen_ai.tool.call.arguments", dumps(c.args)),
                a_str("gen_ai.tool.call.result", dumps(c.result)),
                a_str("logfire.msg", f"running tool: {c.tool.name}"),
                a_str("logfire.span_type", "span"),
            ]

        for turn in sc.turns:
            in_msgs = dumps(genai_messages(hist, result_key="result"))
            out_msgs = dumps(
                [
                    {
                        "role": "assistant",
                        "parts": genai_parts(turn),
                        "finish_reason": "tool_call" if turn.calls else "stop",
                    }
                ]
            )
            it, ot = tokens(in_msgs) + tokens(svc.system), tokens(out_msgs)
            usage_in, usage_out = usage_in + it, usage_out + ot
            cid = self.span_id()
            c_end = t + self._model_latency(len(out_msgs))
            self.http_client(
                tr,
                cid,
                t + self.dur(0.5, 2),
                c_end - self.dur(0.2, 1),
                "https://api.openai.com/v1/chat/completions",
            )
            self.add(
                tr,
                "pydantic",
                f"chat {svc.model}",
                KIND_CLIENT,
                cid,
                agent_id,
                t,
                c_end,
                [
                    a_str("gen_ai.operation.name", "chat"),
                    a_str("gen_ai.system", "openai"),
                    a_str("gen_ai.provider.name", "openai"),
                    a_str("gen_ai.request.model", svc.model),
                    a_str("gen_ai.response.model", svc.model),
                    a_str("gen_ai.response.id", f"chatcmpl-{self.rng.getrandbits(96):024x}"),
                    a_str("server.address", "api.openai.com"),
                    a_int("server.port", 443),
                    a_str("model_request_parameters", params),
                    a_str("gen_ai.system_instructions", system),
                    a_str("gen_ai.input.messages", in_msgs),
                    a_str("gen_ai.output.messages", out_msgs),
                    a_strs(
                        "gen_ai.response.finish_reasons", ["tool_call" if turn.calls else "stop"]
                    ),
                    a_int("gen_ai.usage.input_tokens", it),
                    a_int("gen_ai.usage.output_tokens", ot),
                    a_str("logfire.msg", f"chat {svc.model}"),
                    a_str("logfire.span_type", "span"),
                ],
            )
            t = c_end + self.dur(0.2, 2)
            hist.append(("model", turn))
            if turn.calls:
                rid = self.span_id()
                r_start = t
                t = self.tool_round(tr, rid, t + self.dur(0.05, 0.2), turn.calls, tool_attrs)
                t += self.dur(0.05, 0.3)
                names = [c.tool.name for c in turn.calls]
                self.add(
                    tr,
                    "pydantic",
                    f"running {len(names)} tool" + "s" * (len(names) > 1),
                    KIND_INTERNAL,
                    rid,
                    agent_id,
                    r_start,
                    t,
                    [
                        a_strs("tools", names),
                        a_str("logfire.msg", "running tools: " + ", ".join(names)),
                        a_str("logfire.span_type", "span"),
                    ],
                )
                t += self.dur(0.2, 1)
                hist.append(("tool", turn.calls))
        t += self.dur(0.1, 0.5)
        self.add(
            tr,
            "pydantic",
            f"invoke_agent {svc.agent}",
            KIND_INTERNAL,
            agent_id,
            parent,
            start,
            t,
            [
                a_str("gen_ai.operation.name", "invoke_agent"),
                a_str("gen_ai.agent.name", svc.agent),
                a_str("agent_name", svc.agent),
                a_str("model_name", svc.model),
                a_str("gen_ai.conversation.id", conv),
                a_str("final_result", sc.turns[-1].text or ""),
                a_int("gen_ai.usage.input_tokens", usage_in),
                a_int("gen_ai.usage.output_tokens", usage_out),
                a_str("logfire.msg", f"{svc.agent} run"),
                a_str("logfire.span_type", "span"),
            ],
        )
        return t

    def openinference(
        self,
        tr: TraceOut,
        svc: Service,
        sc: Script,
        conv: str,
        history: History,
        parent: str,
        start: int,
    ) -> int:
        graph_id = self.span_id()
        hist: History = [*history, ("user", sc.user)]
        t = start + self.dur(0.5, 2)
        tool_schemas = [
            a_str(
                f"llm.tools.{i}.tool.json_schema",
                dumps(
                    {
                        "type": "function",
                        "function": {
                            "name": tl.name,
                            "description": tl.description,
                            "parameters": tool_schema(tl, gemini=False),
                        },
                    }
                ),
            )
            for i, tl in enumerate(svc.tools)
        ]
        meta = dumps({"thread_id": conv, "langgraph_step": 1})

        def tool_attrs(c: Call) -> list[Attr]:
            return [
                a_str("openinference.span.kind", "TOOL"),
                a_str("tool.name", c.tool.name),
                a_str("tool.description", c.tool.description),
                a_str("input.value", dumps(c.args)),
                a_str("input.mime_type", "application/json"),
                a_str("output.value", dumps(c.result)),
                a_str("output.mime_type", "application/json"),
                a_str("session.id", conv),
                a_str("metadata", meta),
            ]

        for step, turn in enumerate(sc.turns):
            msgs = openai_messages(svc.system, hist)
            node_id, llm_id = self.span_id(), self.span_id()
            node_start = t
            t += self.dur(0.2, 1)
            attrs = [
                a_str("openinference.span.kind", "LLM"),
                a_str("llm.model_name", svc.model),
                a_str("llm.provider", "openai"),
                a_str("llm.system", "openai"),
                a_str(
                    "llm.invocation_parameters",
                    dumps({"model": svc.model, "temperature": 0.0, "stream": False}),
                ),
                a_str("input.value", dumps({"messages": [msgs]})),
                a_str("input.mime_type", "application/json"),
                a_str("session.id", conv),
                a_str("metadata", meta),
            ]
            for i, m in enumerate(msgs):
                attrs.append(a_str(f"llm.input_messages.{i}.message.role", m["role"]))
                if m.get("content"):
                    attrs.append(a_str(f"llm.input_messages.{i}.message.content", m["content"]))
                if "tool_call_id" in m:
                    attrs.append(
                        a_str(f"llm.input_messages.{i}.message.tool_call_id", m["tool_call_id"])
                    )
                for k, tc in enumerate(m.get("tool_calls", ())):
                    pre = f"llm.input_messages.{i}.message.tool_calls.{k}.tool_call"
                    attrs += [
                        a_str(f"{pre}.id", tc["id"]),
                        a_str(f"{pre}.function.name", tc["function"]["name"]),
                        a_str(f"{pre}.function.arguments", tc["function"]["arguments"]),
                    ]
            out = openai_messages("", [("model", turn)])[1]
            attrs.append(a_str("llm.output_messages.0.message.role", "assistant"))
            if turn.text:
                attrs.append(a_str("llm.output_messages.0.message.content", turn.text))
            for k, tc in enumerate(out.get("tool_calls", ())):
                pre = f"llm.output_messages.0.message.tool_calls.{k}.tool_call"
                attrs += [
                    a_str(f"{pre}.id", tc["id"]),
                    a_str(f"{pre}.function.name", tc["function"]["name"]),
                    a_str(f"{pre}.function.arguments", tc["function"]["arguments"]),
                ]
            out_value = dumps({"generations": [[{"text": turn.text or "", "message": out}]]})
            in_tok, out_tok = tokens(dumps(msgs)), tokens(out_value)
            attrs += [
                a_str("output.value", out_value),
                a_str("output.mime_type", "application/json"),
                a_int("llm.token_count.prompt", in_tok),
                a_int("llm.token_count.completion", out_tok),
                a_int("llm.token_count.total", in_tok + out_tok),
                *tool_schemas,
            ]
            l_end = t + self._model_latency(len(out_value))
            self.http_client(
                tr,
                llm_id,
                t + self.dur(0.5, 2),
                l_end - self.dur(0.2, 1),
                "https://api.openai.com/v1/chat/completions",
            )
            self.add(
                tr, "openinference", "ChatOpenAI", KIND_INTERNAL, llm_id, node_id, t, l_end, attrs
            )
            t = l_end + self.dur(0.2, 1)
            self.add(
                tr,
                "openinference",
                "agent",
                KIND_INTERNAL,
                node_id,
                graph_id,
                node_start,
                t,
                [
                    a_str("openinference.span.kind", "CHAIN"),
                    a_str("input.value", dumps({"messages": len(msgs)})),
                    a_str("output.value", dumps({"messages": [out]})),
                    a_str("output.mime_type", "application/json"),
                    a_str("session.id", conv),
                    a_str(
                        "metadata",
                        dumps(
                            {
                                "thread_id": conv,
                                "langgraph_step": 2 * step + 1,
                                "langgraph_node": "agent",
                            }
                        ),
                    ),
                ],
            )
            hist.append(("model", turn))
            if turn.calls:
                tools_id = self.span_id()
                tools_start = t + self.dur(0.1, 0.5)
                t = self.tool_round(
                    tr, tools_id, tools_start + self.dur(0.1, 0.3), turn.calls, tool_attrs
                )
                t += self.dur(0.1, 0.5)
                self.add(
                    tr,
                    "openinference",
                    "tools",
                    KIND_INTERNAL,
                    tools_id,
                    graph_id,
                    tools_start,
                    t,
                    [
                        a_str("openinference.span.kind", "CHAIN"),
                        a_str("session.id", conv),
                        a_str(
                            "metadata",
                            dumps(
                                {
                                    "thread_id": conv,
                                    "langgraph_step": 2 * step + 2,
                                    "langgraph_node": "tools",
                                }
                            ),
                        ),
                    ],
                )
                hist.append(("tool", turn.calls))
        t += self.dur(0.1, 0.5)
        self.add(
            tr,
            "openinference",
            "LangGraph",
            KIND_INTERNAL,
            graph_id,
            parent,
            start,
            t,
            [
                a_str("openinference.span.kind", "CHAIN"),
                a_str("input.value", dumps({"messages": [["user", sc.user]]})),
                a_str("input.mime_type", "application/json"),
                a_str("output.value", dumps({"messages": [sc.turns[-1].text]})),
                a_str("output.mime_type", "application/json"),
                a_str("session.id", conv),
                a_str("metadata", meta),
            ],
        )
        return t


# --------------------------------------------------------------------------------------
# The simulation: concurrent agents, BatchSpanProcessor-like export in end-time order


SHAPES = ("adk2", "adk1", "pydantic", "openinference")
SHAPE_WEIGHTS = (50, 30, 10, 10)


@dataclass
class Worker:
    svc: Service | None = None
    conv: str = ""
    turns_left: int = 0
    history: History = field(default_factory=list)


def generate(spans_target: int, out: Path, seed: int = 7) -> dict[str, JSON]:
    """Write ``out`` (JSON Lines) with at least ``spans_target`` spans; return counts."""
    g = Gen(seed)
    rng = g.rng
    workers = [Worker() for _ in range(CONCURRENT_AGENTS)]
    ready = [(EPOCH_NS + rng.randint(0, 20 * SEC), w) for w in range(CONCURRENT_AGENTS)]
    heapq.heapify(ready)
    pending: list[tuple[int, int, int, str, dict[str, JSON]]] = []  # end, seq, res, scope, span
    queue: list[tuple[int, str, dict[str, JSON]]] = []
    counts = {
        "spans": 0,
        "lines": 0,
        "traces": 0,
        "agent_runs": 0,
        "health_traces": 0,
        "tool_calls": 0,
        "model_calls": 0,
        "sessions": 0,
        "bytes": 0,
    }
    shape_counts = dict.fromkeys(SHAPES, 0)
    batch_size = rng.randint(50, 200)
    produced = 0

    with out.open("wb") as fh:

        def write_line(items: list[tuple[int, str, dict[str, JSON]]]) -> None:
            by_res: dict[int, dict[str, list[dict[str, JSON]]]] = {}
            for res, scope, span in items:
                by_res.setdefault(res, {}).setdefault(scope, []).append(span)
            doc = {
                "resourceSpans": [
                    {
                        "resource": {"attributes": g.resources[res]},
                        "scopeSpans": [
                            {"scope": SCOPES[scope], "spans": spans, "schemaUrl": SCHEMA_URL}
                            for scope, spans in scopes.items()
                        ],
                        "schemaUrl": SCHEMA_URL,
                    }
                    for res, scopes in by_res.items()
                ]
            }
            line = orjson.dumps(doc) + b"\n"
            fh.write(line)
            counts["lines"] += 1
            counts["spans"] += len(items)
            counts["bytes"] += len(line)

        def drain(before: int | None) -> None:
            nonlocal batch_size
            while pending and (before is None or pending[0][0] < before):
                _, _, res, scope, span = heapq.heappop(pending)
                queue.append((res, scope, span))
                if len(queue) >= batch_size:
                    write_line(queue[:batch_size])
                    del queue[:batch_size]
                    batch_size = rng.randint(50, 200)

        while produced < spans_target:
            start, wi = heapq.heappop(ready)
            # Every span ending before this start is final: no later trace can precede it.
            drain(start)
            w = workers[wi]
            if w.turns_left == 0:
                if rng.random() < 0.03:
                    svc = rng.choice(g.services[rng.choice(SHAPES)])
                    tr = g.health(start, svc)
                    counts["health_traces"] += 1
                    end = max(s[0] for s in tr.spans)
                    _push(pending, tr)
                    produced += len(tr.spans)
                    counts["traces"] += 1
                    heapq.heappush(ready, (end + g.dur(200, 3000), wi))
                    continue
                shape = rng.choices(SHAPES, weights=SHAPE_WEIGHTS)[0]
                w.svc = rng.choice(g.services[shape])
                w.conv = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                w.turns_left = rng.choices((1, 2, 3), weights=(60, 25, 15))[0]
                w.history = []
                counts["sessions"] += 1
            assert w.svc is not None
            before = len(w.history)
            tr = g.trace(start, w.svc, w.conv, w.history)
            new = w.history[before:]
            counts["model_calls"] += sum(1 for k, _ in new if k == "model")
            counts["tool_calls"] += sum(len(v) for k, v in new if k == "tool")
            w.turns_left -= 1
            counts["traces"] += 1
            counts["agent_runs"] += 1
            shape_counts[w.svc.shape] += 1
            end = max(s[0] for s in tr.spans)
            _push(pending, tr)
            produced += len(tr.spans)
            gap = g.dur(5_000, 40_000) if w.turns_left else g.dur(300, 8_000)
            heapq.heappush(ready, (end + gap, wi))
        drain(None)
        if queue:
            write_line(queue)
    counts.update({f"runs_{k}": v for k, v in shape_counts.items()})
    counts["seed"] = seed
    counts["generator_version"] = GENERATOR_VERSION
    return counts


def _push(pending: list[tuple[int, int, int, str, dict[str, JSON]]], tr: TraceOut) -> None:
    for end, seq, scope, span in tr.spans:
        heapq.heappush(pending, (end, seq, tr.service, scope, span))


def meta_path(out: Path) -> Path:
    return out.with_name(out.name + ".meta.json")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--spans", type=int, default=200_000, help="minimum number of spans")
    p.add_argument("-o", "--output", type=Path, required=True, help="JSON Lines file to write")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    counts = generate(args.spans, args.output, seed=args.seed)
    meta_path(args.output).write_bytes(orjson.dumps(counts, option=orjson.OPT_INDENT_2))
    print(
        f"wrote {args.output}: {counts['spans']} spans, {counts['lines']} lines, "
        f"{counts['traces']} traces ({counts['agent_runs']} agent runs), "
        f"{counts['bytes'] / 1e6:.1f} MB in {time.perf_counter() - t0:.1f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
