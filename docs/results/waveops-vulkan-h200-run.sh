#!/bin/bash
# one device call: loader + GL libs from Debian 12, then the Vulkan run
for f in .wave/debs/*.deb; do dpkg -x $f /; done; ldconfig
{
echo "== ldconfig"; ldconfig -p | grep -E 'libvulkan|libGLX_nvidia|libGLdispatch|libEGL_nvidia|glvkspirv'
echo "== icd files"; for f in /usr/local/nvidia/share/vulkan/icd.d/*.json /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json; do echo "-- $f"; cat "$f"; done
echo "== nvidia-smi"; nvidia-smi --query-gpu=name,driver_version --format=csv
echo "== env"; env | grep -E 'NVIDIA|VK_' ; python3 -c 'import numpy; print("numpy", numpy.__version__)'
} 2>&1 | tee $OUT/env.txt
cd .wave && PYTHONUNBUFFERED=1 timeout 420 python3 run_vulkan.py $OUT 2>&1 | tee $OUT/log.txt
