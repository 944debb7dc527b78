"""torch reference for bench-graph: the same training-like step of 20 array operations on 2^16
float32 elements (19 element-wise operations written into tensors made beforehand, and one sum),
run as 20 eager launches and replayed as one torch.cuda.CUDAGraph; host microseconds per step
(median over batches of 100 back-to-back steps, synchronised between batches) and device
microseconds per step (CUDA events around 1000 steps), as benches/src/bin/bench-graph.rs.
Usage: python3 bench_graph_torch.py KERNELS.cu [launch|other] (the kernels are not used)."""

from common import cuda_torch, emit, read_kernels, time_batches

BENCH = "graph"
N = 1 << 16
EAGER = "torch eager, 20 launches (Python)"
GRAPH = "torch.cuda.CUDAGraph replay (Python)"
HOST_CASE = "20-op array step 2^16 f32, host time"
DEVICE_CASE = "20-op array step 2^16 f32, device time"
UNIT = "us/step"
PER_BATCH = 100
WARMUP_BATCHES = 3
BATCHES = 20
DEVICE_STEPS = 1000


def main():
    _, part = read_kernels()
    if part == "launch":
        return
    torch, unavailable = cuda_torch()
    if unavailable:
        for case in (HOST_CASE, DEVICE_CASE):
            for impl in (EAGER, GRAPH):
                emit(BENCH, case, impl, UNIT, status=unavailable)
        return
    print("torch", torch.__version__, "cuda", torch.version.cuda, "on", torch.cuda.get_device_name(0), flush=True)

    def state():
        full = lambda value: torch.full((N,), value, device="cuda", dtype=torch.float32)
        x = ((torch.arange(N, device="cuda") % 1000).to(torch.float32) / 500.0) - 1.0
        return dict(x=x, t=full(0.25), w=full(0.5), b=full(0.0), v=full(0.0), z=full(0.0), a=full(0.0),
                    e=full(0.0), g=full(0.0))

    def step(s):
        x, t, w, b, v, z, a, e, g = (s[k] for k in "x t w b v z a e g".split())
        for _ in range(2):
            torch.addcmul(b, w, x, out=z)                    # 1, 8
            torch.tanh(z, out=a)                             # 2, 9
            torch.sub(a, t, out=e)                           # 3, 10
            torch.mul(e, 1.0 - a * a, out=g)                 # 4 (two kernels in torch: 1 - a*a, then *)
            v.mul_(0.9).addcmul_(g, x)                       # 5
            w.sub_(v, alpha=0.01)                            # 6
            b.sub_(g, alpha=0.01)                            # 7
        torch.mul(e, e, out=g)                               # 15
        g.add_(1e-8).sqrt_()                                 # 16
        e.mul_(0.5).add_(g, alpha=0.5)                       # 17
        torch.mul(e, t, out=a)                               # 18
        torch.sub(a, e, out=z)                               # 19
        z.sum()                                              # 20

    eager, captured = state(), state()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(eager)
            step(captured)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(captured)
    torch.cuda.synchronize()

    for impl, run in ((EAGER, lambda: step(eager)), (GRAPH, graph.replay)):
        try:
            median, detail = time_batches(WARMUP_BATCHES, BATCHES, PER_BATCH, torch.cuda.synchronize, run)
            emit(BENCH, HOST_CASE, impl, UNIT, median, detail=detail)
        except Exception as error:
            emit(BENCH, HOST_CASE, impl, UNIT, status="failed: %s: %s" % (type(error).__name__, error))
        try:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(DEVICE_STEPS):
                run()
            end.record()
            end.synchronize()
            emit(BENCH, DEVICE_CASE, impl, UNIT, start.elapsed_time(end) * 1e3 / DEVICE_STEPS,
                 detail="events around %d steps queued back to back" % DEVICE_STEPS)
        except Exception as error:
            emit(BENCH, DEVICE_CASE, impl, UNIT, status="failed: %s: %s" % (type(error).__name__, error))


if __name__ == "__main__":
    main()
