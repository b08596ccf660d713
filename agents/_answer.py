"""A turn's structured answer (agent.prompt ``schema``): how the schema goes
to each model, and whether the final answer matches it.

A model whose catalog entry says it takes a response schema (``json_schema``)
gets it the wire API's native way (the codecs fit it to the API's subset:
providers/schema_fit.py). Any other model gets one more tool, ``final_result``,
whose parameters are the schema, and is steered to call it: by name when it
has no other tool, else by requiring a tool call each step. Gemini answers a
response schema together with function declarations with a 400 before
Gemini 3, so such a call that offers tools uses the tool too.

The final answer is checked with ``jsonschema`` against the schema the user
gave (not the fitted one: a constraint an API cannot express is still
checked). A wrong answer gets one corrective round: the validation error goes
back to the model (as the tool's error result, or as a user message) and it
answers again; a second wrong answer ends the turn in error, category
``invalid_output``, its raw text kept as the turn's reply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import trio

from providers.types import (
    ProviderError,
    TextBlock,
    ThinkingLevel,
    Tool,
    ToolCallBlock,
    ToolChoice,
)

if TYPE_CHECKING:
    from providers.catalog import Catalog

ANSWER_TOOL = "final_result"
_WRAP = "result"  # a schema whose root is not an object goes in this one property
MAX_ANSWER = 1_000_000  # characters of an answer checked (a bigger one is refused unread)
_ERROR_TEXT = 600  # characters of a validation error said to the model and the caller

__all__ = ["ANSWER_TOOL", "Answer", "Fitting", "Judged", "schema_problem"]


def _is_object(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" and not any(k in schema for k in ("anyOf", "oneOf", "allOf"))


def schema_problem(schema: dict[str, Any], value: Any) -> str | None:
    """Why ``value`` does not match ``schema`` (the error nearest the root, with
    its place), or None when it does."""
    import jsonschema  # not on a turn without a schema

    try:
        default = jsonschema.Draft202012Validator
        cls = jsonschema.validators.validator_for(schema, default=default)
        error = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    except Exception as exc:  # a schema that breaks the validator (refused at prompt time)
        return f"the schema could not be applied: {type(exc).__name__}"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    text = f"at /{where}: {error.message}" if where else error.message
    return text if len(text) <= _ERROR_TEXT else text[: _ERROR_TEXT - 1] + "…"


class Fitting(NamedTuple):
    """What a structured answer changes in a request."""

    tools: list[Tool]
    choice: ToolChoice
    level: ThinkingLevel
    schema: dict[str, Any] | None


@dataclass
class Judged:
    """A model answer read as the turn's final answer."""

    text: str  # the answer as the caller sees it (the model's text, or the tool's arguments)
    data: Any = None
    problem: str | None = None  # why it does not match (None: it does)
    call: ToolCallBlock | None = None  # the final_result call, when it came through the tool


class Answer:
    """One turn's schema and how far its answer has got."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.wrapped = not _is_object(schema)
        self.corrected = False  # the one corrective round was spent
        self.final: Judged | None = None  # the answer the turn ended with
        self.by_tool = False  # the last call asked through final_result

    # ------------------------------------------------------------ asking

    def native(self, catalog: Catalog, provider: str, model: str, api: str, tools: int) -> bool:
        entry = catalog.lookup(provider, model)
        if entry is None or not entry.capabilities.json_schema:
            return False
        # Gemini before 3 answers a response schema beside function
        # declarations with a 400 ("Function calling with a response mime
        # type: 'application/json' is unsupported")
        return not (api == "generate_content" and tools and not model.startswith("gemini-3"))

    def tool(self) -> Tool:
        params = (
            {"type": "object", "properties": {_WRAP: self.schema}, "required": [_WRAP]}
            if self.wrapped
            else self.schema
        )
        return Tool(
            name=ANSWER_TOOL,
            description=(
                "Give your final answer: call this once you have it, with the answer as "
                "the arguments. Nothing else ends the task."
            ),
            parameters=params,
        )

    def steer(self, choice: ToolChoice, others: int) -> ToolChoice:
        """The tool choice of a call offering final_result: the user's forced
        choice stands, and "none" keeps every tool out (final_result too: the
        text answer is then checked)."""
        if choice.mode != "auto":
            return choice
        return ToolChoice(mode="tool", name=ANSWER_TOOL) if not others else ToolChoice(
            mode="required"
        )

    # ------------------------------------------------------------ judging

    def judge(self, blocks: list[Any]) -> Judged | None:
        """The answer in a model response, or None when it is not final (it
        calls other tools: they run first)."""
        calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
        for call in calls:
            if call.name == ANSWER_TOOL:
                return self._from_tool(call)
        if calls:
            return None
        text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
        return self._from_text(text)

    def _from_tool(self, call: ToolCallBlock) -> Judged:
        if call.raw_arguments is not None:
            return Judged(
                text=call.raw_arguments[:MAX_ANSWER],
                problem="the arguments are not a JSON object",
                call=call,
            )
        args: Any = call.arguments
        if self.wrapped:
            if not isinstance(args, dict) or _WRAP not in args:
                text = json.dumps(args, ensure_ascii=False)
                return Judged(text=text, problem=f"give the answer as '{_WRAP}'", call=call)
            args = args[_WRAP]
        text = json.dumps(args, ensure_ascii=False)
        args, problem = self._checked(text, args)
        return Judged(text=text, data=args, problem=problem, call=call)

    def _from_text(self, text: str) -> Judged:
        if len(text) > MAX_ANSWER:
            return Judged(text=text, problem=f"the answer is over {MAX_ANSWER} characters")
        raw = _unfenced(text)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            why = "the answer is empty" if not raw else f"the answer is not JSON ({exc})"
            return Judged(text=text, problem=why)
        data, problem = self._checked(raw, data)
        return Judged(text=text, data=data, problem=problem)

    def _checked(self, text: str, data: Any) -> tuple[Any, str | None]:
        """The answer and why it does not match. OpenAI's strict mode makes
        every property required, an optional one nullable: a ``null`` the
        model gave for an optional property is taken as its absence."""
        if len(text) > MAX_ANSWER:
            return data, f"the answer is over {MAX_ANSWER} characters"
        problem = schema_problem(self.schema, data)
        if problem is not None:
            trimmed = _without_optional_nulls(self.schema, data, 0)
            if trimmed != data and schema_problem(self.schema, trimmed) is None:
                return trimmed, None
        return data, problem

    async def checked(self, blocks: list[Any]) -> Judged | None:
        """``judge`` on a worker thread: a schema's regular expressions run on
        the model's text, and must not hold up every other agent."""
        return await trio.to_thread.run_sync(self.judge, blocks, abandon_on_cancel=True)

    # ------------------------------------------------------------ correcting

    def correction(self, judged: Judged) -> str:
        """What the model is told about a wrong answer, for its one more try."""
        how = (
            f"Call {ANSWER_TOOL} again with a corrected answer"
            if judged.call is not None
            else "Reply again with only the JSON value, nothing before or after it"
        )
        return f"Your answer does not match the required JSON Schema: {judged.problem}. {how}."

    def fit(
        self,
        catalog: Catalog,
        provider: str,
        model: str,
        api: str,
        request: Fitting,
    ) -> tuple[Fitting, str | None]:
        """A call's tools, tool choice, thinking and response schema with the
        answer asked for; and a notice when thinking had to go (Anthropic
        takes no thinking with a forced tool)."""
        tools, choice, level, _ = request
        if self.native(catalog, provider, model, api, len(tools)):
            self.by_tool = False
            return Fitting(tools, choice, level, self.schema), None
        self.by_tool = choice.mode != "none"
        if not self.by_tool:
            return request, None
        steered = self.steer(choice, len(tools))
        note = None
        if steered is not choice and api == "messages" and level != "none":
            note = "thinking is off for this call: Anthropic takes no thinking with a forced tool"
            note += f" ({ANSWER_TOOL}: the model has no native structured output)"
            level = "none"
        return Fitting([*tools, self.tool()], steered, level, None), note

    def failure(self, judged: Judged, provider: str | None) -> ProviderError:
        return ProviderError(
            category="invalid_output",
            message=(
                f"the answer does not match the schema after one corrective retry: "
                f"{judged.problem}"
            ),
            provider=provider,
        )


def _without_optional_nulls(schema: Any, value: Any, depth: int) -> Any:
    """``value`` without the ``null`` members of objects whose schema does
    not require them (where the schema says which, at the places it names)."""
    if depth > 64 or not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        return {
            k: _without_optional_nulls(props.get(k), v, depth + 1)
            for k, v in value.items()
            if not (v is None and k in props and k not in required)
        }
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_without_optional_nulls(schema["items"], v, depth + 1) for v in value]
    return value


def _unfenced(text: str) -> str:
    """The JSON of an answer, without the Markdown fence some models put
    around it even when asked not to."""
    raw = text.strip()
    if raw.startswith("```") and raw.endswith("```") and len(raw) >= 6:
        body = raw[3:-3]
        first, _, rest = body.partition("\n")
        return (rest if first.strip().isalpha() or not first.strip() else body).strip()
    return raw
