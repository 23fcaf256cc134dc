#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer at its best, checked: which ATEN_CPU_CAPABILITY to run
Debian's torch with, and what that peer is.

  torch_peer.py choose THREADS   the fastest capability this build has whose
                                 products are right: each candidate in a
                                 process of its own is checked against float64
                                 (a linear layer's and a convolution's forward
                                 and backward within fp32's rounding bound)
                                 and timed on training steps of the MLP and of
                                 a small CNN; prints one line per candidate on
                                 stderr and the chosen capability on stdout
  torch_peer.py describe THREADS one line: torch's version, its CPU capability,
                                 oneDNN, the BLAS and the kernel OpenBLAS runs
  torch_peer.py probe            (internal) one candidate's check and time

bench/run runs this, and every PyTorch peer, with OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE removed from that command's environment (env -u), so that
OpenBLAS picks the kernel for the CPU it detects.
"""
import ctypes
import os
import subprocess
import sys
import time

CANDIDATES = ("avx512", "avx2", "default")


def blas_kernel():
    """The BLAS torch multiplies through (libblas.so.3) and, for OpenBLAS,
    the kernel it chose and its build."""
    try:
        blas = ctypes.CDLL("libblas.so.3")
    except OSError as error:
        return f"libblas.so.3 not loadable ({error})"
    try:
        blas.openblas_get_corename.restype = ctypes.c_char_p
        blas.openblas_get_config.restype = ctypes.c_char_p
    except AttributeError:
        return "libblas.so.3 is not OpenBLAS"
    return (f"OpenBLAS kernel {blas.openblas_get_corename().decode()} "
            f"({blas.openblas_get_config().decode().strip()})")


def describe(threads):
    import torch
    torch.set_num_threads(threads)
    capability = "?"
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            capability = line.split(":", 1)[1].strip()
    overrides = ", ".join(f"{name}={os.environ[name]}" for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
                          if name in os.environ) or "no OpenBLAS overrides"
    return (f"PyTorch {torch.__version__}, CPU capability {capability}, "
            f"oneDNN {'on' if torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled else 'off'}, "
            f"{torch.get_num_threads()} threads, {blas_kernel()}, {overrides}")


def bound(a, b):
    """|fp32 product - exact| per element of a @ b: fp32 rounding of K terms
    in any order, gamma_K * |a| @ |b|, doubled for the reference's own."""
    import torch
    k = a.shape[1]
    u = 2.0**-24
    return 2 * (k * u / (1 - k * u)) * (a.abs().double() @ b.abs().double()) + 1e-30


def check():
    """Raises AssertionError where a product of this capability is wrong."""
    import torch
    import torch.nn.functional as F
    generator = torch.Generator().manual_seed(7)
    for m, k, n in [(128, 784, 256), (64, 256, 10), (33, 1000, 17), (1024, 1024, 64)]:
        a = torch.randn(m, k, generator=generator)
        w = torch.randn(n, k, generator=generator, requires_grad=True)
        y = F.linear(a, w)
        exact = a.double() @ w.detach().double().T
        assert torch.all((y.double() - exact).abs() <= bound(a, w.detach().T)), f"linear {m}x{k}x{n}"
        dy = torch.randn(m, n, generator=generator)
        y.backward(dy)
        exact = dy.double().T @ a.double()
        assert torch.all((w.grad.double() - exact).abs() <= bound(dy.T, a)), f"linear dW {m}x{k}x{n}"
    x = torch.randn(16, 8, 14, 14, generator=generator)
    w = torch.randn(12, 8, 3, 3, generator=generator)
    y = F.conv2d(x, w, padding=1)
    patches = F.unfold(x, 3, padding=1).transpose(1, 2).reshape(-1, 72)  # [N*L, C*kh*kw]
    exact = (patches.double() @ w.reshape(12, 72).double().T).reshape(16, 196, 12).transpose(1, 2)
    tolerance = bound(patches, w.reshape(12, 72).T).reshape(16, 196, 12).transpose(1, 2)
    assert torch.all((y.reshape(16, 12, 196).double() - exact).abs() <= tolerance), "conv2d"


def probe(threads):
    """Checks this process's capability, then prints the best of 7 timings
    (seconds) of 10 training steps of each model, summed."""
    import torch
    torch.set_num_threads(threads)
    check()
    torch.manual_seed(1)
    models = [
        (torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                             torch.nn.ReLU(), torch.nn.Linear(128, 10)), (128, 784)),
        (torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                             torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                             torch.nn.Flatten(), torch.nn.Linear(64 * 7 * 7, 10)), (32, 1, 28, 28)),
    ]
    total = 0.0
    for model, shape in models:
        optimizer = torch.optim.Adam(model.parameters())
        x, y = torch.randn(*shape), torch.randint(0, 10, (shape[0],))

        def steps(count):
            for _ in range(count):
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()

        steps(3)  # warm up
        best = float("inf")
        for _ in range(7):  # the best of 7: one run of a few ms is at the mercy of the VM
            start = time.perf_counter()
            steps(10)
            best = min(best, time.perf_counter() - start)
        total += best
    print(f"{total:.6f}")


def choose(threads):
    results = {}
    for capability in CANDIDATES:
        env = dict(os.environ)
        env.pop("ATEN_CPU_CAPABILITY", None)
        if capability != "default":
            env["ATEN_CPU_CAPABILITY"] = capability
        run = subprocess.run([sys.executable, __file__, "probe", str(threads)], env=env, capture_output=True,
                             text=True)
        if run.returncode != 0:
            reason = (run.stderr.strip().splitlines() or ["exit " + str(run.returncode)])[-1]
            print(f"peer capability {capability}: refused ({reason})", file=sys.stderr)
            continue
        results[capability] = float(run.stdout.split()[-1])
        print(f"peer capability {capability}: products right, MLP + CNN steps {results[capability]:.3f} s",
              file=sys.stderr)
    if not results:
        sys.exit("torch_peer.py: no CPU capability gave right products")
    print(min(results, key=results.get))


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "choose":
        choose(int(sys.argv[2]))
    elif command == "describe":
        print(describe(int(sys.argv[2])))
    elif command == "probe":
        probe(int(sys.argv[2]))
    else:
        sys.exit(__doc__)
