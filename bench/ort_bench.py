"""Times one ONNX model with onnxruntime on one intra-op thread (called by sramfit-bench).

usage: python3 ort_bench.py MODEL.onnx
Loads the model, runs it 3 times, prints `ready`, then for every line `N` read from stdin runs N
inferences and prints one line: their times in nanoseconds, space-separated; until stdin closes.
The bench keeps one such worker per model, so that its rounds can alternate the engines every few
tens of milliseconds without paying a process start and a session load per round.

`session.qdqisint8allowed = 1`, as for the quantized fixtures (scripts/gen_quantized.py): int8 QDQ
files run on onnxruntime's int8 x int8 integer kernels instead of being converted to uint8
activations first (no effect on float models).
"""
import sys
import time

import numpy as np
import onnxruntime as ort

path = sys.argv[1]
options = ort.SessionOptions()
options.intra_op_num_threads = 1
options.inter_op_num_threads = 1
options.add_session_config_entry("session.qdqisint8allowed", "1")
session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
rng = np.random.default_rng(0)
feeds = {i.name: rng.uniform(-1, 1, [d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
         for i in session.get_inputs()}
for _ in range(3):
    session.run(None, feeds)


def timed(n):
    """The times of n inferences, in nanoseconds, as one line."""
    times = []
    for _ in range(n):
        start = time.perf_counter_ns()
        session.run(None, feeds)
        times.append(time.perf_counter_ns() - start)
    return " ".join(map(str, times))


print("ready", flush=True)
for line in sys.stdin:
    print(timed(int(line)), flush=True)
