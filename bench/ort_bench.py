"""Times one ONNX model with onnxruntime on one intra-op thread (called by sramfit-bench).

usage: python3 ort_bench.py MODEL.onnx ITERATIONS
Prints one line: the per-inference times in nanoseconds, space-separated (after 3 warm-up runs).

`session.qdqisint8allowed = 1`, as for the quantized fixtures (scripts/gen_quantized.py): int8 QDQ
files run on onnxruntime's int8 x int8 integer kernels instead of being converted to uint8
activations first (no effect on float models).
"""
import sys
import time

import numpy as np
import onnxruntime as ort

path, iterations = sys.argv[1], int(sys.argv[2])
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
times = []
for _ in range(iterations):
    start = time.perf_counter_ns()
    session.run(None, feeds)
    times.append(time.perf_counter_ns() - start)
print(" ".join(map(str, times)))
