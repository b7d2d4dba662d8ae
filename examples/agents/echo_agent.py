#!/usr/bin/env python3
"""An example Forge agent in Python, speaking the JSON-lines protocol on stdio.

It has no model: it calls every allowlisted tool in order, filling each argument from the input
field of the same name, else from the previous tool's result, and answers with the last result.
Only the standard library is used. Flush stdout after every line: the harness reads it live.

    forge run --suite smoke --adapter subprocess \\
      --adapter-config '{"command":["python3","examples/agents/echo_agent.py"]}'
"""
import itertools
import json
import sys

_ids = itertools.count(1)


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def receive():
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("the harness closed stdin")
    return json.loads(line)


def call_tool(name, args):
    """Calls a tool through the harness; returns {"ok": True, "result": ...} or {"ok": False, "error": ...}."""
    call_id = str(next(_ids))
    send({"type": "tool_call", "id": call_id, "name": name, "args": args})
    while True:
        message = receive()
        if message.get("type") == "tool_result" and message.get("id") == call_id:
            return message


def main():
    first = receive()
    if first.get("type") != "payload":
        raise SystemExit("expected the payload first")
    payload = first["payload"]
    previous = None
    for tool in payload["tools"]:
        args = {}
        for name, schema in tool["input_schema"].get("properties", {}).items():
            if name in payload["input"]:
                args[name] = payload["input"][name]
            elif previous is not None:
                args[name] = str(previous) if schema.get("type") == "string" and not isinstance(previous, str) else previous
        reply = call_tool(tool["name"], args)
        if not reply["ok"]:
            send({"type": "final", "output": None, "self_report": f"{tool['name']} failed: {reply['error']}"})
            return
        previous = reply["result"]
    names = ", ".join(t["name"] for t in payload["tools"]) or "no tools"
    send({"type": "final", "output": previous, "self_report": f"called {names} (python)"})


if __name__ == "__main__":
    main()
