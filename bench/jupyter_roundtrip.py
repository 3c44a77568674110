"""The reference for bench_code_cells: a local Jupyter kernel (Debian's python3-ipykernel),
driven by jupyter_client's KernelManager over its ZeroMQ channels on loopback, no sandbox.
Prints one JSON line: the kernel's start to its first answer, and N round trips of the cell
`x = x + 1` (execute_request until the kernel is idle again, as a notebook waits), in ms.

    python3 bench/jupyter_roundtrip.py N
"""
import json
import sys
import time

from jupyter_client import KernelManager


def main():
    runs = int(sys.argv[1])
    began = time.perf_counter()
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        client.execute_interactive("x = 0", timeout=60, output_hook=lambda msg: None)
        start_ms = (time.perf_counter() - began) * 1000
        cells = []
        for _ in range(runs):
            t = time.perf_counter()
            reply = client.execute_interactive("x = x + 1", timeout=60, output_hook=lambda msg: None)
            cells.append((time.perf_counter() - t) * 1000)
            if reply["content"]["status"] != "ok":
                raise SystemExit("the cell failed: %r" % reply["content"])
        print(json.dumps({"start_to_first_cell_ms": start_ms, "cell_ms": cells}))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


main()
