"""agents/_answer.py on its own: how an answer is read and judged, how the
schema goes into a request, and what the model is told of a wrong answer."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agents._answer import ANSWER_TOOL, Answer, Fitting, _unfenced, schema_problem
from providers.catalog import load_catalog
from providers.types import TextBlock, Tool, ToolCallBlock, ToolChoice

OBJ = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}


def test_a_text_answer_is_parsed_and_checked():
    a = Answer(OBJ)
    ok = a.judge([TextBlock(text='{"n": 2}')])
    assert ok is not None and ok.problem is None and ok.data == {"n": 2} and ok.call is None
    bad = a.judge([TextBlock(text='{"n": 0}')])
    assert bad.problem == "at /n: 0 is less than the minimum of 1"
    assert a.judge([TextBlock(text="Sure: 2")]).problem.startswith("the answer is not JSON")
    assert a.judge([TextBlock(text="  ")]).problem == "the answer is empty"
    # other tool calls first: not the final answer yet
    assert a.judge([TextBlock(text="x"), ToolCallBlock(id="1", name="glob")]) is None


def test_fences_around_the_json_are_taken_off():
    assert _unfenced('```json\n{"a": 1}\n```') == '{"a": 1}'
    assert _unfenced('```\n[1]\n```') == "[1]"
    assert _unfenced('```{"a": 1}```') == '{"a": 1}'
    assert _unfenced(' {"a": 1} ') == '{"a": 1}'


def test_an_answer_through_the_tool_and_a_wrapped_root():
    a = Answer(OBJ)
    call = ToolCallBlock(id="c", name=ANSWER_TOOL, arguments={"n": 3})
    got = a.judge([call, ToolCallBlock(id="d", name="glob")])
    assert got.data == {"n": 3} and got.call is call and got.text == '{"n": 3}'
    broken = ToolCallBlock(id="c", name=ANSWER_TOOL, raw_arguments="{n:")
    assert a.judge([broken]).problem == "the arguments are not a JSON object"
    listing = Answer({"type": "array", "items": {"type": "integer"}})
    assert listing.tool().parameters["required"] == ["result"]
    got = listing.judge([ToolCallBlock(id="c", name=ANSWER_TOOL, arguments={"result": [1, 2]})])
    assert got.data == [1, 2] and got.problem is None
    assert listing.judge([ToolCallBlock(id="c", name=ANSWER_TOOL, arguments={"x": 1})]).problem


def test_how_each_model_is_asked():
    catalog = load_catalog()
    a = Answer(OBJ)
    base = Fitting([Tool(name="glob")], ToolChoice(), "low", None)
    native, note = a.fit(catalog, "openai", "gpt-4o", "chat", base)
    assert native.schema == OBJ and native.tools == base.tools and note is None
    tool, note = a.fit(catalog, "anthropic", "claude-sonnet-4-20250514", "messages", base)
    assert tool.schema is None and [t.name for t in tool.tools] == ["glob", ANSWER_TOOL]
    assert tool.choice == ToolChoice(mode="required") and tool.level == "none" and "thinking is off" in note
    alone, _ = a.fit(catalog, "anthropic", "claude-sonnet-4-20250514", "messages", base._replace(tools=[]))
    assert alone.choice == ToolChoice(mode="tool", name=ANSWER_TOOL)
    # Gemini 2.x with tools: the tool; without tools, or Gemini 3: native
    assert a.fit(catalog, "google", "gemini-2.5-flash", "generate_content", base)[0].schema is None
    assert a.fit(catalog, "google", "gemini-2.5-flash", "generate_content", base._replace(tools=[]))[0].schema == OBJ
    # "none" keeps every tool out: the text answer is checked
    none = base._replace(choice=ToolChoice(mode="none"))
    assert a.fit(catalog, "openai", "my-model", "chat", none)[0] == none


def test_the_correction_says_what_is_wrong_and_how_to_answer():
    a = Answer(OBJ)
    text = a.judge([TextBlock(text='{"n": "x"}')])
    said = a.correction(text)
    assert "at /n: 'x' is not of type 'integer'" in said and "only the JSON value" in said
    by_tool = a.judge([ToolCallBlock(id="c", name=ANSWER_TOOL, arguments={})])
    assert f"Call {ANSWER_TOOL} again" in a.correction(by_tool)
    failure = a.failure(by_tool, "openai")
    assert failure.category == "invalid_output" and "'n' is a required property" in failure.message


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5), lambda x: st.lists(x, max_size=3) | st.dictionaries(st.text(max_size=3), x, max_size=3), max_leaves=15))
def test_any_json_answer_is_judged_without_raising(value):
    a = Answer(OBJ)
    got = a.judge([TextBlock(text=json.dumps(value))])
    assert (got.problem is None) == (schema_problem(OBJ, value) is None)
    assert (got.problem is None) == (isinstance(value, dict) and type(value.get("n")) is int and value["n"] >= 1)


def test_a_null_for_an_optional_property_is_its_absence():
    """OpenAI's strict mode asks for every property, optional ones as
    nullable: the model's null for one is taken as leaving it out."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "array", "items": {"type": "object", "properties": {"d": {"type": "string"}}}}},
        "required": ["a"],
    }
    got = Answer(schema).judge([TextBlock(text='{"a": "x", "b": null, "c": [{"d": null}]}')])
    assert got.problem is None and got.data == {"a": "x", "c": [{}]}
    required_null = Answer(schema).judge([TextBlock(text='{"a": null}')])
    assert required_null.problem == "at /a: None is not of type 'string'"
