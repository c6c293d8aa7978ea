"""The contract of LLM-judged criteria: async scoring, samples, votes, and failures as data.

A judged criterion is a :class:`~tracescore.criteria.base.Criterion` whose ``judge``
coroutine asks the judge through a :class:`JudgeSession` (which fixes model, samples and
generation config from ADK's ``judge_model_options``) and turns the replies into a
:class:`~tracescore.criteria.base.Score`. ADK's rules hold for every one of them:

* ``num_samples`` identical requests; a failed or unparsable sample is ignored; when no
  sample gave a verdict the score is ``None`` (NOT_EVALUATED) with the failures' reason
  (``unparsable reply``, ``judge timeout``, ``judge error 500``, ...);
* majority votes count a tie as the negative verdict (:func:`majority`);
* any :class:`~tracescore.exceptions.JudgeError` that escapes becomes NOT_EVALUATED with
  its reason; any other exception NOT_EVALUATED ``criterion error: ...``. A judged
  criterion never raises into the scoring engine.
"""

from __future__ import annotations

import asyncio
import logging
from abc import abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from tracescore.conventions.messages import JsonValue
from tracescore.criteria.base import (
    NO_GOLDEN,
    Criterion,
    CriterionResult,
    EvalContext,
    Score,
    criterion_error,
)
from tracescore.exceptions import JudgeError
from tracescore.judge.client import JudgeClient
from tracescore.judge.types import JudgeRequest

__all__ = [
    "NO_JUDGE",
    "JudgeModelOptions",
    "JudgeSession",
    "JudgedCriterion",
    "Samples",
    "json_schema",
    "majority",
]

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

NO_JUDGE = "no judge configured"


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeModelOptions:
    """ADK's ``judge_model_options``: which model, how many samples, what config.

    Attributes:
        judge_model: Model name; None uses the judge settings' default model.
        num_samples: Identical requests per verdict; None uses the criterion's default.
        judge_model_config: Generation options passed to the provider as given.
        parallelism_limit: Accepted for ADK compatibility; concurrency is global here.

    """

    judge_model: str | None = None
    num_samples: int | None = None
    judge_model_config: Mapping[str, JsonValue] = field(default_factory=dict)
    parallelism_limit: int | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> JudgeModelOptions:
        """From a config mapping in snake or camel case.

        Raises:
            ValueError: an unknown key or a value of the wrong type (the message names it).

        """
        names = {
            "judge_model": "judge_model",
            "judgeModel": "judge_model",
            "num_samples": "num_samples",
            "numSamples": "num_samples",
            "judge_model_config": "judge_model_config",
            "judgeModelConfig": "judge_model_config",
            "parallelism_limit": "parallelism_limit",
            "parallelismLimit": "parallelism_limit",
        }
        kwargs: dict[str, Any] = {}
        for key, value in raw.items():
            name = names.get(key)
            if name is None:
                raise ValueError(
                    f"{key}: unknown key (allowed: {', '.join(sorted(set(names.values())))})"
                )
            kwargs[name] = value
        model = kwargs.get("judge_model")
        if model is not None and not isinstance(model, str):
            raise ValueError("judge_model: expected a model name")
        for name in ("num_samples", "parallelism_limit"):
            value = kwargs.get(name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(f"{name}: expected a positive integer")
        config = kwargs.get("judge_model_config")
        if config is None:
            kwargs.pop("judge_model_config", None)
        elif not isinstance(config, Mapping):
            raise ValueError("judge_model_config: expected an object")
        return cls(**kwargs)


@dataclass(frozen=True, slots=True, kw_only=True)
class Samples(Generic[M]):
    """The replies of repeated identical requests: verdicts and failures."""

    replies: tuple[M, ...]
    failures: tuple[JudgeError, ...]

    @property
    def failure_reason(self) -> str:
        """The most common failure reason (for a score that got no verdict at all)."""
        if not self.failures:
            return "no samples"
        return Counter(f.reason for f in self.failures).most_common(1)[0][0]


def majority(votes: Sequence[bool]) -> bool | None:
    """ADK's vote: more positives than negatives wins; a tie is negative; none is None."""
    if not votes:
        return None
    positives = sum(1 for v in votes if v)
    return positives > len(votes) - positives


@dataclass(frozen=True, slots=True)
class JudgeSession:
    """A criterion's handle on the judge: model, samples and config fixed by its options."""

    client: JudgeClient
    criterion: JudgedCriterion

    @property
    def num_samples(self) -> int:
        """Samples per verdict: the criterion's option, else its default."""
        return self.criterion.judge_model_options.num_samples or self.criterion.default_samples

    @property
    def model(self) -> str:
        """The judge model for this criterion."""
        return self.criterion.judge_model_options.judge_model or self.client.default_model

    def request(self, *, system: str, prompt: str, reply_type: type[BaseModel]) -> JudgeRequest:
        """The request for one verdict of ``reply_type``."""
        config = dict(self.criterion.judge_model_options.judge_model_config)
        temperature = config.pop("temperature", self.client.temperature)
        return JudgeRequest(
            model=self.model,
            system=system,
            prompt=prompt,
            schema=json_schema(reply_type),
            temperature=temperature if isinstance(temperature, (int, float)) else None,
            config=config,
        )

    async def ask(self, *, system: str, prompt: str, reply_type: type[M], sample: int = 0) -> M:
        """One verdict (raises :class:`JudgeError` when there is none)."""
        return await self.client.ask(
            self.request(system=system, prompt=prompt, reply_type=reply_type),
            reply_type,
            criterion=self.criterion.name,
            version=self.criterion.version,
            sample=sample,
        )

    async def samples(
        self, *, system: str, prompt: str, reply_type: type[M], n: int | None = None
    ) -> Samples[M]:
        """``n`` (default :attr:`num_samples`) verdicts asked concurrently."""
        count = self.num_samples if n is None else n
        outcomes = await asyncio.gather(
            *(
                self.ask(system=system, prompt=prompt, reply_type=reply_type, sample=i)
                for i in range(count)
            ),
            return_exceptions=True,
        )
        replies: list[M] = []
        failures: list[JudgeError] = []
        for outcome in outcomes:
            if isinstance(outcome, JudgeError):
                failures.append(outcome)
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                replies.append(outcome)
        return Samples(replies=tuple(replies), failures=tuple(failures))


@dataclass(frozen=True, kw_only=True)
class JudgedCriterion(Criterion):
    """Base class of the criteria an LLM judge scores.

    Attributes:
        judge_model_options: ADK's judge options (model, samples, generation config).
        include_intermediate_responses_in_final: Show the judge the intermediate texts
            joined with the final response, where a criterion judges "the response"
            (ADK's criterion option of the same name).

    """

    judged: ClassVar[bool] = True
    #: Samples per verdict when ``num_samples`` is not configured.
    default_samples: ClassVar[int] = 1

    judge_model_options: JudgeModelOptions = field(default_factory=JudgeModelOptions)
    include_intermediate_responses_in_final: bool = False

    def score(self, ctx: EvalContext) -> Score:
        """Without a judge there is no verdict: NOT_EVALUATED ``no judge configured``."""
        return Score(value=None, reason=NO_JUDGE)

    @abstractmethod
    async def judge(self, ctx: EvalContext, session: JudgeSession) -> Score:
        """Rate one invocation with the judge. May raise: errors become data."""

    async def evaluate_async(self, ctx: EvalContext, client: JudgeClient | None) -> CriterionResult:
        """Score one invocation through the judge with ADK's status rules; never raises."""
        if self.requires_reference and ctx.expected is None:
            return self._result(Score(value=None, reason=NO_GOLDEN))
        if client is None:
            return self._result(Score(value=None, reason=NO_JUDGE))
        try:
            score = await self.judge(ctx, JudgeSession(client, self))
        except JudgeError as exc:
            score = Score(value=None, reason=exc.reason, details={"error": str(exc)})
        except Exception as exc:  # a broken criterion must not cost the others
            score = criterion_error(self.name, exc)
        return self._result(score)


def json_schema(model: type[BaseModel]) -> dict[str, JsonValue]:
    """The reply schema of ``model``, self-contained (``$ref`` inlined, titles dropped).

    Providers' structured-output modes accept different JSON-schema subsets; a flat
    schema without references or titles is the common ground.
    """
    cached = _SCHEMAS.get(model)
    if cached is not None:
        return cached
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})

    def inline(node: Any, *, names: bool = False) -> Any:
        # ``names``: the keys of ``properties`` are field names, not schema keywords.
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            return {
                k: inline(v, names=k == "properties" and not names)
                for k, v in node.items()
                if names or k != "title"
            }
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    schema: dict[str, JsonValue] = inline(raw)
    _SCHEMAS[model] = schema
    return schema


_SCHEMAS: dict[type[BaseModel], dict[str, JsonValue]] = {}
