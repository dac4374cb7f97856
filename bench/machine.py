"""What a benchmark record says of the machine (bench/results/render.py reads it):
the CPU model, the flags that matter for speed, the cores and the OS."""
import os
import re

FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile")


def machine():
    info = open("/proc/cpuinfo", encoding="utf-8").read()
    model = re.search(r"^model name\s*:\s*(.*)$", info, re.M)
    m = re.search(r"^flags\s*:\s*(.*)$", info, re.M)
    flags = set(m.group(1).split()) if m else set()
    os_name = "Linux"
    if os.path.exists("/etc/os-release"):
        m = re.search(r'^PRETTY_NAME="?([^"\n]*)', open("/etc/os-release", encoding="utf-8").read(), re.M)
        os_name = m.group(1) if m else os_name
    return {"cpu": model.group(1).strip() if model else "unknown", "cores": os.cpu_count(), "os": os_name,
            "flags": ", ".join(f.upper() for f in FLAGS if f in flags) or "none of AVX2, AVX-512, AMX"}
