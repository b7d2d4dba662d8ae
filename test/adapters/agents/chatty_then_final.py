# Widens its stdout pipe to 1 MiB, fills it with chatter, writes its final answer and exits at once:
# when the harness sees the exit, the answer is still behind a pipe full of unread lines (issue 12).
import fcntl
import json
import os
import sys

F_SETPIPE_SZ = 1031
try:
    fcntl.fcntl(1, F_SETPIPE_SZ, 1 << 20)
except OSError:
    pass
payload = json.loads(sys.stdin.readline())["payload"]
chatter = ("chatter " * 15 + "\n").encode()
out = chatter * 8000 + (json.dumps({"type": "final", "output": str(payload["input"]["value"]).upper()}) + "\n").encode()
view = memoryview(out)
while view:
    view = view[os.write(1, view):]
os._exit(0)
