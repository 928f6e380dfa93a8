"""Device run: the waveops SPIR-V rotate modules on the machine's Vulkan driver vs the CPU wave."""
import json, os, subprocess, sys, time, traceback
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
CANDIDATES = ["/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json",
              "/usr/share/vulkan/icd.d/nvidia_icd.json", "/etc/vulkan/icd.d/nvidia_icd.json"]


def probe():
    from wv import vulkan
    d = vulkan.Device()
    print(json.dumps(d.info))
    d.close()


def reference(x, delta, w):
    from wv._core import source_lane
    i = np.arange(x.size, dtype=np.int64)
    if np.ndim(delta):
        d = np.asarray(delta, dtype=np.int64)
    else:
        d = np.int64(int(delta) % w)
    return x[source_lane(i, d, w)]


def main_run(out_dir):
    from wv import vulkan, spirv
    exp = np.load(os.path.join(HERE, "expected32.npz"))
    dev = vulkan.Device()
    info = dev.info
    S = info["subgroup_size"]
    print(json.dumps(info, indent=1), flush=True)
    mr_opts = [True, False] if info["shaderMaximalReconvergence"] else [False]
    lowerings = ["shuffle"]
    if info["shaderSubgroupRotate"]:
        lowerings.insert(0, "rotate")
    rows, t0 = [], time.time()
    for lowering in lowerings:
        for name, x, dl in (("u32", exp["x32"], exp["d32"]), ("u64", exp["x64"], exp["d64"])):
            dt = "uint32" if name == "u32" else "uint64"
            for w in [None, 1, 2, 4, 8, 16, 32]:
                if w is not None and w > S:
                    continue
                if lowering == "rotate" and w is not None and not info["shaderSubgroupRotateClustered"]:
                    continue
                for mr in mr_opts:
                    cases = [(int(d), f"d{int(d)}") for d in exp["deltas"]]
                    if lowering == "shuffle":
                        cases.append((dl, "perlane"))
                    for delta, tag in cases:
                        per_lane = tag == "perlane"
                        mod = spirv.rotate_module(dt, w, lowering, per_lane, mr, 64)
                        row = dict(lowering=lowering, dtype=dt, width=w, delta=tag, maximal_reconvergence=mr)
                        try:
                            dv = (np.asarray(delta) & 0xFFFFFFFF).astype(np.uint32) if per_lane else delta
                            got = dev.run_module(mod, x, dv, 64)
                            ref = reference(x, delta, w or S)
                            row["equal_numpy_formula"] = bool(np.array_equal(got, ref))
                            key = f"exp_{name}_w{w}_{tag}"
                            if S == 32:
                                e = exp[key]
                                row["equal_waveops_cpu"] = bool(np.array_equal(got, e))
                                bad = np.flatnonzero(got != e)
                                row["mismatches"] = int(bad.size)
                                if bad.size:
                                    row["first_mismatch"] = [int(bad[0]), int(got[bad[0]]), int(e[bad[0]])]
                        except Exception as exc:
                            row["error"] = f"{type(exc).__name__}: {exc}"
                        rows.append(row)
    ok = [r for r in rows if r.get("equal_waveops_cpu", r.get("equal_numpy_formula")) and "error" not in r]
    summary = dict(runs=len(rows), bit_identical=len(ok), seconds=round(time.time() - t0, 2),
                   lowerings_run=lowerings, maximal_reconvergence_variants=mr_opts, subgroup_size=S)
    print(json.dumps(summary), flush=True)
    dev.close()
    return info, summary, rows


if __name__ == "__main__":
    if sys.argv[1] == "--probe":
        probe()
        sys.exit(0)
    out_dir = sys.argv[1]
    attempts, chosen, found = [], None, False
    for icd in [c for c in CANDIDATES if os.path.exists(c)] + [None]:
        env = dict(os.environ)
        if icd:
            env["VK_DRIVER_FILES"] = env["VK_ICD_FILENAMES"] = icd
        env["__EGL_VENDOR_LIBRARY_FILENAMES"] = "/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json"
        r = subprocess.run([sys.executable, __file__, "--probe"], env=env, capture_output=True, text=True, timeout=120)
        a = dict(icd=icd, rc=r.returncode, stdout=r.stdout[-3000:], stderr=r.stderr[-3000:])
        if r.returncode != 0:
            env["VK_LOADER_DEBUG"] = "error,warn,driver"
            r2 = subprocess.run([sys.executable, __file__, "--probe"], env=env, capture_output=True, text=True, timeout=120)
            a["loader_debug"] = (r2.stdout + r2.stderr)[-6000:]
        attempts.append(a)
        print(json.dumps(a, indent=1), flush=True)
        if r.returncode == 0:
            chosen, found = icd, True
            break
    result = dict(attempts=attempts, icd=chosen)
    if found:
        if chosen:
            os.environ["VK_DRIVER_FILES"] = os.environ["VK_ICD_FILENAMES"] = chosen
        try:
            info, summary, rows = main_run(out_dir)
            result.update(device=info, summary=summary, rows=rows)
        except Exception:
            result["error"] = traceback.format_exc()
            print(result["error"])
    with open(os.path.join(out_dir, "vulkan-h200.json"), "w") as f:
        json.dump(result, f, indent=1)
