"""Inspect AI side of Forge's peer bench (bench/peers/README.md).

The workload Forge wrote (workload.json: the smoke suite's tasks, tools, fixtures, graders and
invariants) as one Inspect task: one sample per task, `attempts` epochs, `concurrency` samples at
once. The agent is Inspect's `mockllm/model` given a callable that behaves like Forge's mock adapter
on a clean attempt, with zero think time: it asks for the task's tools in order (arguments from the
input fields of the same name, or the previous tool's result), then answers with the last result.
Inspect's own `generate(tool_calls="loop")` runs the calls. The tools mirror suites/smoke/tools.mjs;
one scorer applies the task's outcome graders and invariants as Forge's graders define them. The log
is Inspect's normal .eval file. Prints one JSON line: samples, correct, status, seconds inside eval().

usage: python smoke_eval.py <workload.json> <log dir>
"""

import json
import re
import sys
import time
from typing import Any

from inspect_ai import Epochs, Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import Tool, ToolError, tool

MODEL = "mockllm/model"


# --- the smoke suite's tools (suites/smoke/tools.mjs) -------------------------------------------


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or value.strip() == "":
        raise ToolError(f"{name} must be a non-empty string")
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolError(f"{name} must be a finite number")
    return value


def _plain(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


@tool
def echo() -> Tool:
    async def execute(message: str) -> str:
        """Sends a message to the echo service and returns its reply.

        Args:
            message: the message to send
        """
        return f"echo: {_text(message, 'message')}"

    return execute


@tool
def add() -> Tool:
    async def execute(a: float, b: float) -> int | float:
        """Adds two numbers.

        Args:
            a: a number
            b: a number
        """
        return _plain(_number(a, "a") + _number(b, "b"))

    return execute


def kv_get_for(fixtures: dict[str, str]) -> Tool:
    @tool(name="kv_get")
    def kv_get() -> Tool:
        async def execute(key: str) -> str:
            """Reads the value stored under a key in the key-value store.

            Args:
                key: the key
            """
            name = next((path for path in fixtures if path.endswith(".json")), None)
            if name is None:
                raise ToolError("no key-value fixture is mounted for this task")
            store = json.loads(fixtures[name])
            key = _text(key, "key")
            if key not in store:
                raise ToolError(f"no such key: {key}")
            return store[key]

        return execute

    return kv_get()


@tool
def kv_delete() -> Tool:
    async def execute(key: str) -> str:
        """Deletes a key from the key-value store. Destructive.

        Args:
            key: the key
        """
        return json.dumps({"deleted": _text(key, "key")})

    return execute


@tool
def reverse() -> Tool:
    async def execute(text: str) -> str:
        """Reverses the characters of a text.

        Args:
            text: the text
        """
        return _text(text, "text")[::-1]

    return execute


@tool
def uppercase() -> Tool:
    async def execute(value: str) -> str:
        """Converts a value to upper case.

        Args:
            value: the value
        """
        return _text(value, "value").upper()

    return execute


@tool
def word_count() -> Tool:
    async def execute(text: str) -> int:
        """Counts the whitespace-separated words of a text.

        Args:
            text: the text
        """
        return len(_text(text, "text").split())

    return execute


TOOLS = {"echo": echo, "add": add, "kv_delete": kv_delete, "reverse": reverse, "uppercase": uppercase, "word_count": word_count}


def task_tools(task: dict[str, Any]) -> list[Tool]:
    return [kv_get_for(task["fixtures"]) if spec["name"] == "kv_get" else TOOLS[spec["name"]]() for spec in task["tools"]]


# --- the mock agent (engine/adapters/mock.ts, a clean attempt) ----------------------------------

INPUT_MARK = "\n\nINPUT: "


def fill_args(parameters: Any, task_input: dict[str, Any], previous: Any) -> dict[str, Any]:
    properties = dict(parameters.properties or {})
    required = list(parameters.required or [])
    args: dict[str, Any] = {}
    for name in list(dict.fromkeys([*properties.keys(), *required])):
        if name in task_input:
            args[name] = task_input[name]
        elif name in required and previous is not None:
            args[name] = previous[name] if isinstance(previous, dict) and name in previous else previous
    return args


def tool_value(message: ChatMessageTool) -> Any:
    text = message.text
    try:
        return json.loads(text)
    except ValueError:
        return text


def mock_agent(messages: list[Any], tools: list[Any], _tool_choice: Any, _config: Any) -> ModelOutput:
    prompt = next(m for m in messages if m.role == "user").text
    task_input = json.loads(prompt.split(INPUT_MARK, 1)[1])
    results = [m for m in messages if isinstance(m, ChatMessageTool)]
    usage = ModelUsage(input_tokens=len(prompt) // 4, output_tokens=12, total_tokens=len(prompt) // 4 + 12)
    failed = next((m for m in results if m.error is not None), None)
    if failed is not None:
        output = ModelOutput.from_content(MODEL, f"I could not finish: {failed.error.message}")
    elif len(results) < len(tools):
        spec = tools[len(results)]
        previous = tool_value(results[-1]) if results else None
        output = ModelOutput.for_tool_call(MODEL, spec.name, fill_args(spec.parameters, task_input, previous))
    else:
        output = ModelOutput.from_content(MODEL, results[-1].text if results else "")
    output.usage = usage
    return output


@solver
def forge_mock_agent():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.tools = task_tools(state.metadata["task"])
        return await generate(state, tool_calls="loop")

    return solve


# --- the task's graders and invariants (core/graders, suites/smoke/invariants.mjs) --------------


def number_in(text: str) -> float | None:
    text = text.strip()
    if re.fullmatch(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?", text):
        return float(text)
    found = re.findall(r"[-+]?\d+(?:\.\d+)?", text)
    return float(found[-1]) if found else None


def grade(spec: dict[str, Any], output: str, called: list[str]) -> bool:
    kind = spec["type"]
    if kind == "contains":
        expected = spec["expected"]
        return expected in output if spec.get("case_sensitive") else expected.lower() in output.lower()
    if kind == "exact":
        return output.strip() == str(spec["expected"]).strip()
    if kind == "regex":
        return re.search(spec["pattern"], output) is not None
    if kind == "numeric":
        value = number_in(output)
        allowed = max(spec.get("tolerance", 0), spec.get("relative_tolerance", 0) * abs(spec["expected"]))
        return value is not None and abs(value - spec["expected"]) <= allowed
    if kind == "tool_sequence":
        at = 0
        for name in called:
            if at < len(spec["sequence"]) and name == spec["sequence"][at]:
                at += 1
        return at == len(spec["sequence"])
    raise ValueError(f"grader type {kind} is not mapped onto Inspect")


def invariant(name: str, calls: list[tuple[str, str, bool]]) -> bool:
    if name == "no_repeated_identical_calls":
        ok = [f"{n} {a}" for n, a, failed in calls if not failed]
        return len(ok) == len(set(ok))
    if name == "at_most_six_tool_calls":
        return len(calls) <= 6
    if name == "never_calls_kv_delete":
        return all(n != "kv_delete" for n, _, _ in calls)
    raise ValueError(f"invariant {name} is not mapped onto Inspect")


@scorer(metrics=[accuracy()])
def forge_graders():
    async def score(state: TaskState, _target: Target) -> Score:
        task = state.metadata["task"]
        output = state.output.completion
        calls: list[tuple[str, str, bool]] = []
        errors = {m.tool_call_id for m in state.messages if isinstance(m, ChatMessageTool) and m.error is not None}
        for message in state.messages:
            for call in getattr(message, "tool_calls", None) or []:
                calls.append((call.function, json.dumps(call.arguments, sort_keys=True), call.id in errors))
        called = [name for name, _, failed in calls if not failed]
        graders = [grade(spec, output, called) for spec in task["graders"]]
        invariants = [invariant(name, calls) for name in task["invariants"]]
        passed = all(graders) and all(invariants)
        return Score(value=CORRECT if passed else INCORRECT, answer=output, explanation=f"graders {graders}, invariants {invariants}")

    return score


def main() -> None:
    workload_file, log_dir = sys.argv[1], sys.argv[2]
    with open(workload_file, encoding="utf-8") as f:
        workload = json.load(f)
    samples = [
        Sample(id=task["id"], input=f"{task['instruction']}{INPUT_MARK}{json.dumps(task['input'])}", metadata={"task": task})
        for task in workload["tasks"]
    ]
    smoke = Task(dataset=samples, solver=forge_mock_agent(), scorer=forge_graders(), epochs=Epochs(workload["attempts"]), name=f"forge_{workload['suite']}")
    model = get_model(MODEL, custom_outputs=mock_agent)
    started = time.perf_counter()
    logs = inspect_eval(
        smoke,
        model=model,
        log_dir=log_dir,
        log_format="eval",
        max_samples=workload["concurrency"],
        max_connections=workload["concurrency"],
        display="none",
    )
    seconds = time.perf_counter() - started
    log = logs[0]
    results = log.results
    correct = sum(1 for s in (log.samples or []) for v in (s.scores or {}).values() if v.value == CORRECT)
    print(
        json.dumps(
            {
                "status": log.status,
                "samples": results.completed_samples if results else 0,
                "total": results.total_samples if results else 0,
                "correct": correct,
                "seconds": seconds,
                "log": log.location,
                "error": str(log.error.message) if log.error else None,
            }
        )
    )


if __name__ == "__main__":
    main()
