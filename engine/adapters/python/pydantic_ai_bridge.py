"""Forge's PydanticAI bridge: runs one attempt of a PydanticAI agent as an out-of-process agent.

Spawned by the `pydantic-ai` adapter (workers/adapters/pydantic-ai.ts) through the subprocess
adapter, so it speaks Forge's JSON-lines agent protocol on stdio (core/agent-protocol.ts):

    stdin, first line:  {"type": "payload", "protocol": 1, "payload": {...InvocationPayload}}
    stdout:             {"type": "tool_call", "id": "1", "name": "...", "args": {...}}
    stdin:              {"type": "tool_result", "id": "1", "ok": true, "result": ...}
    stdout, last:       {"type": "final", "output": "...", "self_report": "..."}

The model is reached only through the attempt's LLM gateway: OPENAI_BASE_URL and OPENAI_API_KEY
(a per-attempt token) are set by the harness. FORGE_PYDANTIC_AI holds the model name, decoding
settings, system prompt and step limit as JSON. A new Agent object is built for every attempt,
and the process exits after it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

EXIT_CONFIG = 2
EXIT_NOT_INSTALLED = 3


def emit(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message, default=str) + "\n")
    sys.stdout.flush()


class ToolChannel:
    """Tool calls out on stdout, results back from stdin, correlated by id (calls may overlap)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.next_id = 0

    async def pump(self) -> None:
        while True:
            line = await self.reader.readline()
            if not line:
                for future in self.pending.values():
                    if not future.done():
                        future.set_exception(EOFError("the harness closed stdin"))
                return
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(message, dict) and message.get("type") == "tool_result":
                future = self.pending.pop(str(message.get("id")), None)
                if future is not None and not future.done():
                    future.set_result(message)

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        self.next_id += 1
        call_id = str(self.next_id)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[call_id] = future
        emit({"type": "tool_call", "id": call_id, "name": name, "args": args})
        result = await future
        if result.get("ok"):
            value = result.get("result")
            return value if isinstance(value, str) else json.dumps(value)
        # the model sees the error and may try again; the harness counts the retry
        return f"Error: {result.get('error', 'tool failed')}"


def build_tools(specs: list[dict[str, Any]], channel: ToolChannel) -> list[Any]:
    from pydantic_ai import Tool

    tools = []
    for spec in specs:
        name = spec["name"]

        async def run(_name: str = name, **kwargs: Any) -> Any:
            return await channel.call(_name, kwargs)

        schema = spec.get("input_schema") or {"type": "object", "properties": {}}
        tools.append(Tool.from_schema(run, name=name, description=spec.get("description") or None, json_schema=schema))
    return tools


def user_prompt(payload: dict[str, Any]) -> str:
    text = payload["instruction"]
    if payload.get("input"):
        text += "\n\nInput:\n" + json.dumps(payload["input"], indent=2)
    return text


async def main() -> int:
    try:
        settings = json.loads(os.environ["FORGE_PYDANTIC_AI"])
    except (KeyError, json.JSONDecodeError) as error:
        print(f"FORGE_PYDANTIC_AI must hold the bridge settings as JSON: {error}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        from pydantic_ai import Agent
        from pydantic_ai.exceptions import ModelHTTPError, UsageLimitExceeded
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
        from pydantic_ai.usage import UsageLimits
    except ImportError as error:
        print(f"PydanticAI is not installed for {sys.executable}: pip install 'pydantic-ai-slim[openai]' ({error})", file=sys.stderr)
        return EXIT_NOT_INSTALLED

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    first = await reader.readline()
    message = json.loads(first)
    if message.get("type") != "payload":
        print(f"expected a payload line first, got {first[:200]!r}", file=sys.stderr)
        return EXIT_CONFIG
    payload = message["payload"]

    channel = ToolChannel(reader)
    pump = asyncio.create_task(channel.pump())

    decoding = settings.get("decoding", {})
    model_settings: dict[str, Any] = {}
    for key in ("temperature", "top_p", "seed", "max_tokens", "frequency_penalty", "presence_penalty"):
        if key in decoding:
            model_settings[key] = decoding[key]
    if "stop" in decoding:
        stop = decoding["stop"]
        model_settings["stop_sequences"] = [stop] if isinstance(stop, str) else stop

    # a new model client and agent for this attempt only: nothing is shared with another attempt
    provider = OpenAIProvider(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    model = OpenAIChatModel(settings["model"], provider=provider)
    agent = Agent(
        model,
        system_prompt=settings.get("system_prompt", ""),
        tools=build_tools(payload.get("tools", []), channel),
        model_settings=model_settings or None,
        retries=settings.get("retries", 1),
    )
    try:
        result = await agent.run(user_prompt(payload), usage_limits=UsageLimits(request_limit=settings.get("max_steps", 12)))
        emit({"type": "final", "output": result.output, "self_report": f"pydantic-ai: {len(result.all_messages())} messages"})
        return 0
    except UsageLimitExceeded as error:
        emit({"type": "final", "output": None, "self_report": f"stopped: {error}"})
        return 0
    except ModelHTTPError as error:
        if error.status_code >= 500:
            # the model server failed, not the agent
            print(f"model call failed: {error.status_code} {error.body}", file=sys.stderr)
            return 1
        emit({"type": "final", "output": None, "self_report": f"model error {error.status_code}: {error.body}"})
        return 0
    finally:
        pump.cancel()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
