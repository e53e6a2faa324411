"""A stand-in for the vLLM server of train.vllm_mode server (tests of
grpo_repro.train.vllm_server.serve on CPU): `python vllm_server_standin.py --port P [--delay S]
[--die] [--child]` prints its environment's CUDA_VISIBLE_DEVICES and VLLM_SERVER_DEV_MODE, then
answers GET /health with 200 after `delay` seconds, as vLLM's server does once its model is loaded.
--die: exit with status 3 before answering (a server that fails to start); --child: start a
sleeping child process first (in the stand-in's process group, as vLLM's workers are) and
print its pid; --ignore-term: ignore SIGTERM (a server that does not stop when asked)."""

import argparse
import http.server
import os
import signal
import subprocess
import sys
import time


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        print("standin request:", self.path, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--die", action="store_true")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--ignore-term", action="store_true")
    a = ap.parse_args()
    if a.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(f"standin CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}", flush=True)
    print(f"standin VLLM_SERVER_DEV_MODE={os.environ.get('VLLM_SERVER_DEV_MODE')}", flush=True)
    if a.child:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(f"standin child pid={child.pid}", flush=True)
    print(f"standin server_pid={os.getpid()}", flush=True)
    time.sleep(a.delay)
    if a.die:
        print("standin: CUDA out of memory (stand-in failure)", file=sys.stderr, flush=True)
        sys.exit(3)
    server = http.server.HTTPServer(("127.0.0.1", a.port), Health)
    print("standin: serving", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
