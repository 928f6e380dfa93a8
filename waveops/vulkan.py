"""Run ``waveops.spirv`` modules on a Vulkan device, through ctypes (no Python bindings needed).

Only the Vulkan loader is needed (``libvulkan.so.1``: Debian's ``libvulkan1``)
plus a driver.  ``Device`` picks a physical device, reports what it offers
for the rotate (subgroup size and operations, ``shaderSubgroupRotate``,
``shaderSubgroupRotateClustered``, ``shaderMaximalReconvergence``), creates a
logical device with those features enabled, and runs a module over host
arrays::

    dev = Device()
    info = dev.info                       # a dict: name, driver, subgroup size, features
    lowering = dev.best_lowering(width)   # 'rotate' where offered, else 'shuffle'
    out = dev.rotate(x, delta, width)     # = waveops.cpu.rotate(x, delta, width or S)

``rotate`` builds the module (`waveops.spirv.rotate_module`) with the
lowering the device supports and says which ran (``dev.last_lowering``).
"""

from __future__ import annotations

import ctypes as C
import os
from typing import Any, Optional, Sequence, TypeVar

import numpy as np
import numpy.typing as npt

from . import spirv

__all__ = ["Device", "VulkanUnavailable", "loader_available"]

# --------------------------------------------------------------------------
# The C API subset used here (vulkan_core.h)

u32, u64, i32, f32 = C.c_uint32, C.c_uint64, C.c_int32, C.c_float
ptr, cstr = C.c_void_p, C.c_char_p
HANDLE = u64  # non-dispatchable handles

ST = dict(
    APPLICATION_INFO=0, INSTANCE_CREATE_INFO=1, DEVICE_QUEUE_CREATE_INFO=2, DEVICE_CREATE_INFO=3,
    SUBMIT_INFO=4, MEMORY_ALLOCATE_INFO=5, FENCE_CREATE_INFO=8, BUFFER_CREATE_INFO=12,
    SHADER_MODULE_CREATE_INFO=16, PIPELINE_SHADER_STAGE_CREATE_INFO=18,
    COMPUTE_PIPELINE_CREATE_INFO=29, PIPELINE_LAYOUT_CREATE_INFO=30,
    DESCRIPTOR_SET_LAYOUT_CREATE_INFO=32, DESCRIPTOR_POOL_CREATE_INFO=33,
    DESCRIPTOR_SET_ALLOCATE_INFO=34, WRITE_DESCRIPTOR_SET=35, COMMAND_POOL_CREATE_INFO=39,
    COMMAND_BUFFER_ALLOCATE_INFO=40, COMMAND_BUFFER_BEGIN_INFO=42, MEMORY_BARRIER=46,
    PHYSICAL_DEVICE_FEATURES_2=1000059000, PHYSICAL_DEVICE_PROPERTIES_2=1000059001,
    PHYSICAL_DEVICE_SUBGROUP_PROPERTIES=1000094000, PHYSICAL_DEVICE_DRIVER_PROPERTIES=1000196000,
    PHYSICAL_DEVICE_SHADER_SUBGROUP_ROTATE_FEATURES=1000416000,
    PHYSICAL_DEVICE_SHADER_MAXIMAL_RECONVERGENCE_FEATURES_KHR=1000434000,
)
EXT_ROTATE = b"VK_KHR_shader_subgroup_rotate"
EXT_MAXIMAL_RECONVERGENCE = b"VK_KHR_shader_maximal_reconvergence"
SUBGROUP_OPS = {0x1: "basic", 0x2: "vote", 0x4: "arithmetic", 0x8: "ballot", 0x10: "shuffle",
                0x20: "shuffle_relative", 0x40: "clustered", 0x80: "quad",
                0x200: "rotate", 0x400: "rotate_clustered"}
_COMPUTE_STAGE = 0x20
_STORAGE_BUFFER = 7


def _S(name, fields):
    return type(name, (C.Structure,), {"_fields_": fields})


ApplicationInfo = _S("ApplicationInfo", [("sType", u32), ("pNext", ptr), ("pApplicationName", cstr),
                                         ("applicationVersion", u32), ("pEngineName", cstr),
                                         ("engineVersion", u32), ("apiVersion", u32)])
InstanceCreateInfo = _S("InstanceCreateInfo", [
    ("sType", u32), ("pNext", ptr), ("flags", u32), ("pApplicationInfo", C.POINTER(ApplicationInfo)),
    ("enabledLayerCount", u32), ("ppEnabledLayerNames", C.POINTER(cstr)),
    ("enabledExtensionCount", u32), ("ppEnabledExtensionNames", C.POINTER(cstr))])
Properties2 = _S("Properties2", [("sType", u32), ("pNext", ptr), ("properties", C.c_uint8 * 1024)])
SubgroupProperties = _S("SubgroupProperties", [("sType", u32), ("pNext", ptr), ("subgroupSize", u32),
                                               ("supportedStages", u32), ("supportedOperations", u32),
                                               ("quadOperationsInAllStages", u32)])
DriverProperties = _S("DriverProperties", [("sType", u32), ("pNext", ptr), ("driverID", u32),
                                           ("driverName", C.c_char * 256), ("driverInfo", C.c_char * 256),
                                           ("conformanceVersion", C.c_uint8 * 4)])
Features2 = _S("Features2", [("sType", u32), ("pNext", ptr), ("features", u32 * 55)])
RotateFeatures = _S("RotateFeatures", [("sType", u32), ("pNext", ptr), ("shaderSubgroupRotate", u32),
                                       ("shaderSubgroupRotateClustered", u32)])
ReconvergenceFeatures = _S("ReconvergenceFeatures", [("sType", u32), ("pNext", ptr),
                                                     ("shaderMaximalReconvergence", u32)])
ExtensionProperties = _S("ExtensionProperties", [("extensionName", C.c_char * 256), ("specVersion", u32)])
QueueFamilyProperties = _S("QueueFamilyProperties", [("queueFlags", u32), ("queueCount", u32),
                                                     ("timestampValidBits", u32), ("granularity", u32 * 3)])
DeviceQueueCreateInfo = _S("DeviceQueueCreateInfo", [("sType", u32), ("pNext", ptr), ("flags", u32),
                                                     ("queueFamilyIndex", u32), ("queueCount", u32),
                                                     ("pQueuePriorities", C.POINTER(f32))])
DeviceCreateInfo = _S("DeviceCreateInfo", [
    ("sType", u32), ("pNext", ptr), ("flags", u32), ("queueCreateInfoCount", u32),
    ("pQueueCreateInfos", C.POINTER(DeviceQueueCreateInfo)), ("enabledLayerCount", u32),
    ("ppEnabledLayerNames", C.POINTER(cstr)), ("enabledExtensionCount", u32),
    ("ppEnabledExtensionNames", C.POINTER(cstr)), ("pEnabledFeatures", ptr)])
MemoryType = _S("MemoryType", [("propertyFlags", u32), ("heapIndex", u32)])
MemoryHeap = _S("MemoryHeap", [("size", u64), ("flags", u32)])
MemoryProperties = _S("MemoryProperties", [("memoryTypeCount", u32), ("memoryTypes", MemoryType * 32),
                                           ("memoryHeapCount", u32), ("memoryHeaps", MemoryHeap * 16)])
BufferCreateInfo = _S("BufferCreateInfo", [("sType", u32), ("pNext", ptr), ("flags", u32), ("size", u64),
                                           ("usage", u32), ("sharingMode", u32),
                                           ("queueFamilyIndexCount", u32), ("pQueueFamilyIndices", ptr)])
MemoryRequirements = _S("MemoryRequirements", [("size", u64), ("alignment", u64), ("memoryTypeBits", u32)])
MemoryAllocateInfo = _S("MemoryAllocateInfo", [("sType", u32), ("pNext", ptr), ("allocationSize", u64),
                                               ("memoryTypeIndex", u32)])
ShaderModuleCreateInfo = _S("ShaderModuleCreateInfo", [("sType", u32), ("pNext", ptr), ("flags", u32),
                                                       ("codeSize", C.c_size_t), ("pCode", ptr)])
DescriptorSetLayoutBinding = _S("DescriptorSetLayoutBinding", [
    ("binding", u32), ("descriptorType", u32), ("descriptorCount", u32), ("stageFlags", u32),
    ("pImmutableSamplers", ptr)])
DescriptorSetLayoutCreateInfo = _S("DescriptorSetLayoutCreateInfo", [
    ("sType", u32), ("pNext", ptr), ("flags", u32), ("bindingCount", u32),
    ("pBindings", C.POINTER(DescriptorSetLayoutBinding))])
PushConstantRange = _S("PushConstantRange", [("stageFlags", u32), ("offset", u32), ("size", u32)])
PipelineLayoutCreateInfo = _S("PipelineLayoutCreateInfo", [
    ("sType", u32), ("pNext", ptr), ("flags", u32), ("setLayoutCount", u32),
    ("pSetLayouts", C.POINTER(HANDLE)), ("pushConstantRangeCount", u32),
    ("pPushConstantRanges", C.POINTER(PushConstantRange))])
PipelineShaderStageCreateInfo = _S("PipelineShaderStageCreateInfo", [
    ("sType", u32), ("pNext", ptr), ("flags", u32), ("stage", u32), ("module", HANDLE),
    ("pName", cstr), ("pSpecializationInfo", ptr)])
ComputePipelineCreateInfo = _S("ComputePipelineCreateInfo", [
    ("sType", u32), ("pNext", ptr), ("flags", u32), ("stage", PipelineShaderStageCreateInfo),
    ("layout", HANDLE), ("basePipelineHandle", HANDLE), ("basePipelineIndex", i32)])
DescriptorPoolSize = _S("DescriptorPoolSize", [("type", u32), ("descriptorCount", u32)])
DescriptorPoolCreateInfo = _S("DescriptorPoolCreateInfo", [
    ("sType", u32), ("pNext", ptr), ("flags", u32), ("maxSets", u32), ("poolSizeCount", u32),
    ("pPoolSizes", C.POINTER(DescriptorPoolSize))])
DescriptorSetAllocateInfo = _S("DescriptorSetAllocateInfo", [
    ("sType", u32), ("pNext", ptr), ("descriptorPool", HANDLE), ("descriptorSetCount", u32),
    ("pSetLayouts", C.POINTER(HANDLE))])
DescriptorBufferInfo = _S("DescriptorBufferInfo", [("buffer", HANDLE), ("offset", u64), ("range", u64)])
WriteDescriptorSet = _S("WriteDescriptorSet", [
    ("sType", u32), ("pNext", ptr), ("dstSet", HANDLE), ("dstBinding", u32), ("dstArrayElement", u32),
    ("descriptorCount", u32), ("descriptorType", u32), ("pImageInfo", ptr),
    ("pBufferInfo", C.POINTER(DescriptorBufferInfo)), ("pTexelBufferView", ptr)])
CommandPoolCreateInfo = _S("CommandPoolCreateInfo", [("sType", u32), ("pNext", ptr), ("flags", u32),
                                                     ("queueFamilyIndex", u32)])
CommandBufferAllocateInfo = _S("CommandBufferAllocateInfo", [
    ("sType", u32), ("pNext", ptr), ("commandPool", HANDLE), ("level", u32), ("commandBufferCount", u32)])
CommandBufferBeginInfo = _S("CommandBufferBeginInfo", [("sType", u32), ("pNext", ptr), ("flags", u32),
                                                       ("pInheritanceInfo", ptr)])
MemoryBarrier = _S("MemoryBarrier", [("sType", u32), ("pNext", ptr), ("srcAccessMask", u32),
                                     ("dstAccessMask", u32)])
SubmitInfo = _S("SubmitInfo", [
    ("sType", u32), ("pNext", ptr), ("waitSemaphoreCount", u32), ("pWaitSemaphores", ptr),
    ("pWaitDstStageMask", ptr), ("commandBufferCount", u32), ("pCommandBuffers", C.POINTER(ptr)),
    ("signalSemaphoreCount", u32), ("pSignalSemaphores", ptr)])
FenceCreateInfo = _S("FenceCreateInfo", [("sType", u32), ("pNext", ptr), ("flags", u32)])


_ScalarT = TypeVar("_ScalarT", bound=np.generic)


class VulkanUnavailable(RuntimeError):
    """No Vulkan loader, no instance, or no device: the message says which and why."""


_RESULTS = {-1: "VK_ERROR_OUT_OF_HOST_MEMORY", -2: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
            -3: "VK_ERROR_INITIALIZATION_FAILED", -4: "VK_ERROR_DEVICE_LOST",
            -6: "VK_ERROR_LAYER_NOT_PRESENT", -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
            -8: "VK_ERROR_FEATURE_NOT_PRESENT", -9: "VK_ERROR_INCOMPATIBLE_DRIVER",
            -13: "VK_ERROR_UNKNOWN", 2: "VK_TIMEOUT"}


def _load():
    names = [os.environ.get("WAVEOPS_VULKAN_LIBRARY") or "libvulkan.so.1", "libvulkan.so"]
    errors = []
    for name in names:
        try:
            return C.CDLL(name)
        except OSError as exc:
            errors.append(str(exc))
    raise VulkanUnavailable(
        "no Vulkan loader: " + "; ".join(errors) + " (install Debian's libvulkan1, or set "
        "WAVEOPS_VULKAN_LIBRARY to the loader's path)")


def loader_available() -> bool:
    """True when a Vulkan loader library can be opened here (no device is touched).

    Returns
    -------
    bool
        Whether ``libvulkan.so.1`` (or ``$WAVEOPS_VULKAN_LIBRARY``) loads.  A
        loader without a driver still says True; :class:`Device` then raises
        :class:`VulkanUnavailable`.

    See Also
    --------
    Device : Opens a device through the loader.

    Examples
    --------
    >>> from waveops import vulkan
    >>> vulkan.loader_available() in (True, False)
    True
    """
    try:
        _load()
        return True
    except VulkanUnavailable:
        return False


def _strings(names):
    arr = (cstr * max(1, len(names)))(*names)
    return arr, len(names)


class Device:
    """A Vulkan compute device with the rotate's features enabled where offered.

    Parameters
    ----------
    index : int, optional
        Which physical device (``vkEnumeratePhysicalDevices`` order); default
        the first, or ``WAVEOPS_VULKAN_DEVICE``.

    Attributes
    ----------
    info : dict
        What the device offers: ``device_name``, ``driver_name``,
        ``api_version``, ``subgroup_size``, ``subgroup_operations``,
        ``shaderSubgroupRotate``, ``shaderSubgroupRotateClustered``,
        ``shaderMaximalReconvergence``, ...
    enabled_extensions : list of str
        The device extensions enabled (the rotate's and maximal
        reconvergence's, where offered).
    last_lowering : str or None
        The lowering the last :meth:`rotate` ran (``'rotate'`` or ``'shuffle'``).

    Raises
    ------
    VulkanUnavailable
        No loader, no instance, or no device (the message says which).

    See Also
    --------
    loader_available : Whether a loader is there at all.
    waveops.spirv.rotate_module : The modules it runs.

    Notes
    -----
    Use it as a context manager, or call :meth:`close`, to destroy the device
    and the instance.

    Examples
    --------
    On a machine with a Vulkan driver (Mesa's lavapipe runs on any CPU):

    >>> import numpy as np, waveops
    >>> from waveops.vulkan import Device
    >>> x = np.arange(256, dtype=np.float32)
    >>> with Device() as dev:                                      # doctest: +SKIP
    ...     out = dev.rotate(x, 3, width=8)
    ...     print(dev.last_lowering, np.array_equal(out, waveops.cpu.rotate(x, 3, width=8)))
    rotate True
    """

    instance: Any  # the Vulkan handles, None once closed
    device: Any

    def __init__(self, index: Optional[int] = None) -> None:
        self.vk = vk = _load()
        self._keep: list[Any] = []
        self._setup_signatures()
        loader = u32(0)
        try:
            vk.vkEnumerateInstanceVersion(C.byref(loader))
        except AttributeError:
            loader.value = 1 << 22
        self.loader_version = loader.value
        api = min(loader.value, (1 << 22) | (3 << 12))  # at most 1.3: what Debian 12's loader knows
        app = ApplicationInfo(ST["APPLICATION_INFO"], None, b"waveops", 1, b"waveops", 1, api)
        ici = InstanceCreateInfo(ST["INSTANCE_CREATE_INFO"], None, 0, C.pointer(app), 0, None, 0, None)
        self.instance = ptr()
        self._check(vk.vkCreateInstance(C.byref(ici), None, C.byref(self.instance)), "vkCreateInstance")
        n = u32(0)
        vk.vkEnumeratePhysicalDevices(self.instance, C.byref(n), None)
        if n.value == 0:
            raise VulkanUnavailable("vkEnumeratePhysicalDevices found no device (no driver, or "
                                    "VK_DRIVER_FILES / VK_ICD_FILENAMES points to none)")
        pds = (ptr * n.value)()
        vk.vkEnumeratePhysicalDevices(self.instance, C.byref(n), pds)
        if index is None:
            index = int(os.environ.get("WAVEOPS_VULKAN_DEVICE", "0"))
        self.physical = ptr(pds[index])
        self.info = self._query()
        self._create_device()
        self.last_lowering: Optional[str] = None

    # -- setup ------------------------------------------------------------
    def _setup_signatures(self):
        vk = self.vk
        for name in ("vkMapMemory",):
            getattr(vk, name).argtypes = [ptr, HANDLE, u64, u64, u32, C.POINTER(ptr)]
        vk.vkUnmapMemory.argtypes = [ptr, HANDLE]
        vk.vkBindBufferMemory.argtypes = [ptr, HANDLE, HANDLE, u64]
        vk.vkGetBufferMemoryRequirements.argtypes = [ptr, HANDLE, C.POINTER(MemoryRequirements)]
        vk.vkCmdBindPipeline.argtypes = [ptr, u32, HANDLE]
        vk.vkCmdBindDescriptorSets.argtypes = [ptr, u32, HANDLE, u32, u32, C.POINTER(HANDLE), u32, ptr]
        vk.vkCmdPushConstants.argtypes = [ptr, HANDLE, u32, u32, u32, ptr]
        vk.vkCmdDispatch.argtypes = [ptr, u32, u32, u32]
        vk.vkCmdPipelineBarrier.argtypes = [ptr, u32, u32, u32, u32, C.POINTER(MemoryBarrier),
                                            u32, ptr, u32, ptr]
        vk.vkQueueSubmit.argtypes = [ptr, u32, C.POINTER(SubmitInfo), HANDLE]
        vk.vkWaitForFences.argtypes = [ptr, u32, C.POINTER(HANDLE), u32, u64]
        vk.vkGetDeviceQueue.argtypes = [ptr, u32, u32, C.POINTER(ptr)]
        vk.vkCreateComputePipelines.argtypes = [ptr, HANDLE, u32, C.POINTER(ComputePipelineCreateInfo),
                                                ptr, C.POINTER(HANDLE)]
        for name in ("vkDestroyPipeline", "vkDestroyPipelineLayout", "vkDestroyShaderModule",
                     "vkDestroyDescriptorSetLayout", "vkDestroyDescriptorPool", "vkDestroyBuffer",
                     "vkFreeMemory", "vkDestroyFence", "vkDestroyCommandPool"):
            getattr(vk, name).argtypes = [ptr, HANDLE, ptr]

    @staticmethod
    def _check(res, what):
        if res != 0:
            raise VulkanUnavailable(f"{what} returned {res} ({_RESULTS.get(res, 'see vulkan_core.h')})")

    def _extensions(self):
        n = u32(0)
        self.vk.vkEnumerateDeviceExtensionProperties(self.physical, None, C.byref(n), None)
        arr = (ExtensionProperties * n.value)()
        self.vk.vkEnumerateDeviceExtensionProperties(self.physical, None, C.byref(n), arr)
        return {e.extensionName: e.specVersion for e in arr}

    def _query(self):
        vk = self.vk
        self.extensions = self._extensions()
        sub = SubgroupProperties(ST["PHYSICAL_DEVICE_SUBGROUP_PROPERTIES"], None)
        drv = DriverProperties(ST["PHYSICAL_DEVICE_DRIVER_PROPERTIES"], C.cast(C.pointer(sub), ptr))
        props = Properties2(ST["PHYSICAL_DEVICE_PROPERTIES_2"], C.cast(C.pointer(drv), ptr))
        vk.vkGetPhysicalDeviceProperties2(self.physical, C.byref(props))
        raw = bytes(props.properties)
        api, driver_version, vendor, device_id, dtype = np.frombuffer(raw[:20], dtype="<u4").tolist()
        name = raw[20:276].split(b"\0")[0].decode()
        self.rotate_features = RotateFeatures(ST["PHYSICAL_DEVICE_SHADER_SUBGROUP_ROTATE_FEATURES"], None)
        self.mr_features = ReconvergenceFeatures(
            ST["PHYSICAL_DEVICE_SHADER_MAXIMAL_RECONVERGENCE_FEATURES_KHR"], None)
        chain = None
        if EXT_ROTATE in self.extensions:
            self.rotate_features.pNext = chain
            chain = C.cast(C.pointer(self.rotate_features), ptr)
        if EXT_MAXIMAL_RECONVERGENCE in self.extensions:
            self.mr_features.pNext = chain
            chain = C.cast(C.pointer(self.mr_features), ptr)
        feats = Features2(ST["PHYSICAL_DEVICE_FEATURES_2"], chain)
        vk.vkGetPhysicalDeviceFeatures2(self.physical, C.byref(feats))
        ops = sub.supportedOperations

        def ver(v):
            return f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"

        return {
            "device_name": name, "vendor_id": hex(vendor), "device_id": hex(device_id),
            "device_type": dtype, "api_version": ver(api), "driver_version_raw": driver_version,
            "driver_name": drv.driverName.decode(), "driver_info": drv.driverInfo.decode(),
            "loader_version": ver(self.loader_version),
            "subgroup_size": sub.subgroupSize,
            "subgroup_stages": hex(sub.supportedStages),
            "subgroup_operations": [v for k, v in SUBGROUP_OPS.items() if ops & k],
            "ext_subgroup_rotate": self.extensions.get(EXT_ROTATE),
            "ext_maximal_reconvergence": self.extensions.get(EXT_MAXIMAL_RECONVERGENCE),
            "shaderSubgroupRotate": bool(self.rotate_features.shaderSubgroupRotate),
            "shaderSubgroupRotateClustered": bool(self.rotate_features.shaderSubgroupRotateClustered),
            "shaderMaximalReconvergence": bool(self.mr_features.shaderMaximalReconvergence),
        }

    def _create_device(self):
        vk = self.vk
        n = u32(0)
        vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical, C.byref(n), None)
        fams = (QueueFamilyProperties * n.value)()
        vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical, C.byref(n), fams)
        self.family = next(i for i, q in enumerate(fams) if q.queueFlags & 0x2)  # COMPUTE
        prio = (f32 * 1)(1.0)
        qci = DeviceQueueCreateInfo(ST["DEVICE_QUEUE_CREATE_INFO"], None, 0, self.family, 1, prio)
        exts, chain = [], None
        if self.info["shaderSubgroupRotate"]:
            exts.append(EXT_ROTATE)
            chain = C.cast(C.pointer(self.rotate_features), ptr)
            self.rotate_features.pNext = None
        if self.info["shaderMaximalReconvergence"]:
            exts.append(EXT_MAXIMAL_RECONVERGENCE)
            self.mr_features.pNext = chain
            chain = C.cast(C.pointer(self.mr_features), ptr)
        feats = Features2(ST["PHYSICAL_DEVICE_FEATURES_2"], chain)  # all core features off
        names, count = _strings(exts)
        dci = DeviceCreateInfo(ST["DEVICE_CREATE_INFO"], C.cast(C.pointer(feats), ptr), 0, 1,
                               C.pointer(qci), 0, None, count, names, None)
        self.device = ptr()
        self._check(vk.vkCreateDevice(self.physical, C.byref(dci), None, C.byref(self.device)),
                    "vkCreateDevice")
        self.queue = ptr()
        vk.vkGetDeviceQueue(self.device, self.family, 0, C.byref(self.queue))
        mp = MemoryProperties()
        vk.vkGetPhysicalDeviceMemoryProperties(self.physical, C.byref(mp))
        want = 0x2 | 0x4  # HOST_VISIBLE | HOST_COHERENT
        self.memory_type = next(i for i in range(mp.memoryTypeCount)
                                if mp.memoryTypes[i].propertyFlags & want == want)
        self.enabled_extensions = [e.decode() for e in exts]

    # -- what the device offers ------------------------------------------
    def best_lowering(self, width: Optional[int] = None) -> str:
        """``'rotate'`` when the device runs ``OpGroupNonUniformRotateKHR`` (clustered
        too when ``width`` is given), else ``'shuffle'``.

        Parameters
        ----------
        width : int, optional
            The rotation group; None (default) for the whole subgroup.

        Returns
        -------
        str
            ``'rotate'`` or ``'shuffle'``, for :func:`waveops.spirv.rotate_module`.

        See Also
        --------
        rotate : Uses it when no lowering is given.

        Examples
        --------
        >>> from waveops.vulkan import Device
        >>> Device().best_lowering(8)                                 # doctest: +SKIP
        'rotate'
        """
        if not self.info["shaderSubgroupRotate"]:
            return "shuffle"
        if width is not None and not self.info["shaderSubgroupRotateClustered"]:
            return "shuffle"
        return "rotate"

    # -- running ----------------------------------------------------------
    def _buffer(self, nbytes):
        vk, dev = self.vk, self.device
        bci = BufferCreateInfo(ST["BUFFER_CREATE_INFO"], None, 0, max(nbytes, 16), 0x20, 0, 0, None)
        buf = HANDLE()
        self._check(vk.vkCreateBuffer(dev, C.byref(bci), None, C.byref(buf)), "vkCreateBuffer")
        req = MemoryRequirements()
        vk.vkGetBufferMemoryRequirements(dev, buf, C.byref(req))
        mai = MemoryAllocateInfo(ST["MEMORY_ALLOCATE_INFO"], None, req.size, self.memory_type)
        mem = HANDLE()
        self._check(vk.vkAllocateMemory(dev, C.byref(mai), None, C.byref(mem)), "vkAllocateMemory")
        self._check(vk.vkBindBufferMemory(dev, buf, mem, 0), "vkBindBufferMemory")
        return buf, mem, req.size

    def _write(self, mem, data):
        p = ptr()
        self._check(self.vk.vkMapMemory(self.device, mem, 0, len(data), 0, C.byref(p)), "vkMapMemory")
        C.memmove(p, data, len(data))
        self.vk.vkUnmapMemory(self.device, mem)

    def _read(self, mem, nbytes):
        p = ptr()
        self._check(self.vk.vkMapMemory(self.device, mem, 0, nbytes, 0, C.byref(p)), "vkMapMemory")
        out = C.string_at(p, nbytes)
        self.vk.vkUnmapMemory(self.device, mem)
        return out

    def run_module(self, words: Sequence[int], x: np.ndarray, delta: Any,
                   local_size: int) -> np.ndarray:
        """Run a `waveops.spirv.rotate_module` over ``x`` (raw words) and return ``out``.

        ``delta`` is an int (push constant) or a uint32 array (binding 2).
        ``x.size`` must be a multiple of ``local_size``.

        Parameters
        ----------
        words : list of int
            A module from :func:`waveops.spirv.rotate_module`.
        x : numpy.ndarray
            1-D raw words (uint32 or uint64, matching the module's dtype).
        delta : int or numpy.ndarray
            An int for a uniform module; one uint32 per lane for a per-lane one.
        local_size : int
            The module's work-group size; one work-group per ``local_size``
            elements is dispatched.

        Returns
        -------
        numpy.ndarray
            ``out``, a new array of ``x``'s dtype.

        Raises
        ------
        VulkanUnavailable
            A Vulkan call that failed (the message names it and its result).

        See Also
        --------
        rotate : Builds the module and runs it.

        Examples
        --------
        >>> import numpy as np
        >>> from waveops import spirv
        >>> from waveops.vulkan import Device
        >>> words = spirv.rotate_module("uint32", width=4, lowering="shuffle")
        >>> x = np.arange(64, dtype=np.uint32)
        >>> Device().run_module(words, x, 1, 64)[:8]                 # doctest: +SKIP
        array([1, 2, 3, 0, 5, 6, 7, 4], dtype=uint32)
        """
        vk, dev = self.vk, self.device
        x = np.ascontiguousarray(x)
        per_lane = not np.isscalar(delta) and np.ndim(delta) == 1
        created = []
        try:
            code = spirv.to_bytes(words)
            cbuf = C.create_string_buffer(code, len(code))
            smci = ShaderModuleCreateInfo(ST["SHADER_MODULE_CREATE_INFO"], None, 0, len(code),
                                          C.cast(cbuf, ptr))
            shader = HANDLE()
            self._check(vk.vkCreateShaderModule(dev, C.byref(smci), None, C.byref(shader)),
                        "vkCreateShaderModule")
            created.append(("vkDestroyShaderModule", shader))
            nb = 3 if per_lane else 2
            binds = (DescriptorSetLayoutBinding * nb)(*[
                DescriptorSetLayoutBinding(i, _STORAGE_BUFFER, 1, _COMPUTE_STAGE, None) for i in range(nb)])
            dslci = DescriptorSetLayoutCreateInfo(ST["DESCRIPTOR_SET_LAYOUT_CREATE_INFO"], None, 0, nb, binds)
            dsl = HANDLE()
            self._check(vk.vkCreateDescriptorSetLayout(dev, C.byref(dslci), None, C.byref(dsl)),
                        "vkCreateDescriptorSetLayout")
            created.append(("vkDestroyDescriptorSetLayout", dsl))
            pcr = PushConstantRange(_COMPUTE_STAGE, 0, 4)
            plci = PipelineLayoutCreateInfo(ST["PIPELINE_LAYOUT_CREATE_INFO"], None, 0, 1, C.pointer(dsl),
                                            0 if per_lane else 1, None if per_lane else C.pointer(pcr))
            layout = HANDLE()
            self._check(vk.vkCreatePipelineLayout(dev, C.byref(plci), None, C.byref(layout)),
                        "vkCreatePipelineLayout")
            created.append(("vkDestroyPipelineLayout", layout))
            stage = PipelineShaderStageCreateInfo(ST["PIPELINE_SHADER_STAGE_CREATE_INFO"], None, 0,
                                                  _COMPUTE_STAGE, shader, b"main", None)
            cpci = ComputePipelineCreateInfo(ST["COMPUTE_PIPELINE_CREATE_INFO"], None, 0, stage, layout, 0, -1)
            pipe = HANDLE()
            self._check(vk.vkCreateComputePipelines(dev, 0, 1, C.byref(cpci), None, C.byref(pipe)),
                        "vkCreateComputePipelines")
            created.append(("vkDestroyPipeline", pipe))

            arrays = [x, np.empty_like(x)]
            if per_lane:
                arrays.append(np.ascontiguousarray(delta, dtype=np.uint32))
            bufs = []
            for a in arrays:
                buf, mem, _ = self._buffer(a.nbytes)
                created += [("vkDestroyBuffer", buf), ("vkFreeMemory", mem)]
                bufs.append((buf, mem, a.nbytes))
            self._write(bufs[0][1], x.tobytes())
            self._write(bufs[1][1], b"\xa5" * x.nbytes)  # poisoned: an unwritten lane shows
            if per_lane:
                self._write(bufs[2][1], arrays[2].tobytes())

            psize = DescriptorPoolSize(_STORAGE_BUFFER, nb)
            dpci = DescriptorPoolCreateInfo(ST["DESCRIPTOR_POOL_CREATE_INFO"], None, 0, 1, 1, C.pointer(psize))
            pool = HANDLE()
            self._check(vk.vkCreateDescriptorPool(dev, C.byref(dpci), None, C.byref(pool)),
                        "vkCreateDescriptorPool")
            created.append(("vkDestroyDescriptorPool", pool))
            dsai = DescriptorSetAllocateInfo(ST["DESCRIPTOR_SET_ALLOCATE_INFO"], None, pool, 1, C.pointer(dsl))
            dset = HANDLE()
            self._check(vk.vkAllocateDescriptorSets(dev, C.byref(dsai), C.byref(dset)),
                        "vkAllocateDescriptorSets")
            infos = [DescriptorBufferInfo(b, 0, n) for b, _, n in bufs]
            writes = (WriteDescriptorSet * nb)(*[
                WriteDescriptorSet(ST["WRITE_DESCRIPTOR_SET"], None, dset, i, 0, 1, _STORAGE_BUFFER,
                                   None, C.pointer(infos[i]), None) for i in range(nb)])
            vk.vkUpdateDescriptorSets(dev, nb, writes, 0, None)

            cpool = HANDLE()
            cpci2 = CommandPoolCreateInfo(ST["COMMAND_POOL_CREATE_INFO"], None, 0, self.family)
            self._check(vk.vkCreateCommandPool(dev, C.byref(cpci2), None, C.byref(cpool)),
                        "vkCreateCommandPool")
            created.append(("vkDestroyCommandPool", cpool))
            cbai = CommandBufferAllocateInfo(ST["COMMAND_BUFFER_ALLOCATE_INFO"], None, cpool, 0, 1)
            cb = ptr()
            self._check(vk.vkAllocateCommandBuffers(dev, C.byref(cbai), C.byref(cb)),
                        "vkAllocateCommandBuffers")
            begin = CommandBufferBeginInfo(ST["COMMAND_BUFFER_BEGIN_INFO"], None, 1, None)
            self._check(vk.vkBeginCommandBuffer(cb, C.byref(begin)), "vkBeginCommandBuffer")
            vk.vkCmdBindPipeline(cb, 1, pipe)
            vk.vkCmdBindDescriptorSets(cb, 1, layout, 0, 1, C.pointer(dset), 0, None)
            if not per_lane:
                pc = u32(int(delta) & 0xFFFFFFFF)
                vk.vkCmdPushConstants(cb, layout, _COMPUTE_STAGE, 0, 4, C.byref(pc))
            vk.vkCmdDispatch(cb, x.shape[0] // local_size, 1, 1)
            barrier = MemoryBarrier(ST["MEMORY_BARRIER"], None, 0x40, 0x2000)  # SHADER_WRITE -> HOST_READ
            vk.vkCmdPipelineBarrier(cb, 0x800, 0x4000, 0, 1, C.pointer(barrier), 0, None, 0, None)
            self._check(vk.vkEndCommandBuffer(cb), "vkEndCommandBuffer")
            fci = FenceCreateInfo(ST["FENCE_CREATE_INFO"], None, 0)
            fence = HANDLE()
            self._check(vk.vkCreateFence(dev, C.byref(fci), None, C.byref(fence)), "vkCreateFence")
            created.append(("vkDestroyFence", fence))
            cbs = (ptr * 1)(cb)
            si = SubmitInfo(ST["SUBMIT_INFO"], None, 0, None, None, 1, cbs, 0, None)
            self._check(vk.vkQueueSubmit(self.queue, 1, C.byref(si), fence), "vkQueueSubmit")
            self._check(vk.vkWaitForFences(dev, 1, C.pointer(fence), 1, 60 * 10**9), "vkWaitForFences")
            raw = self._read(bufs[1][1], x.nbytes)
            return np.frombuffer(raw, dtype=x.dtype).copy()
        finally:
            for fn, h in reversed(created):
                getattr(vk, fn)(dev, h, None)

    def rotate(self, x: npt.NDArray[_ScalarT], delta: npt.ArrayLike,
               width: Optional[int] = None, lowering: Optional[str] = None,
               local_size: Optional[int] = None) -> npt.NDArray[_ScalarT]:
        """``waveops.cpu.rotate(x, delta, width or subgroup size)``, computed by the device.

        Parameters
        ----------
        x : numpy.ndarray
            A 1-D array of int32, uint32, float32, int64, uint64 or float64,
            its length a multiple of the work-group size.
        delta : int or array_like of int
            An int (the native rotate where offered) or one integer per lane
            (the shuffle lowering).
        width : int, optional
            The rotation group, a power of two up to the subgroup size; None
            (default) for the whole subgroup.
        lowering : {'rotate', 'shuffle'}, optional
            Default: :meth:`best_lowering` (``'shuffle'`` for per-lane deltas);
            the one used is left in ``last_lowering``.
        local_size : int, optional
            Work-group size (default: the larger of 64 and the subgroup size).

        Returns
        -------
        numpy.ndarray
            A new array of ``x``'s dtype, bit for bit
            ``waveops.cpu.rotate(x, delta, width or subgroup size)``.

        Raises
        ------
        ValueError
            ``len(x)`` not a multiple of the work-group size, or arguments
            :func:`waveops.spirv.rotate_module` refuses.
        VulkanUnavailable
            A Vulkan call that failed.

        See Also
        --------
        waveops.cpu.rotate : The CPU reference.
        run_module : Runs a module built elsewhere.

        Examples
        --------
        >>> import numpy as np
        >>> from waveops.vulkan import Device
        >>> x = np.arange(64, dtype=np.int32)
        >>> with Device() as dev:                                     # doctest: +SKIP
        ...     print(dev.rotate(x, 1, width=4)[:8], dev.last_lowering)
        [1 2 3 0 5 6 7 4] rotate
        """
        x = np.ascontiguousarray(x)
        words = x.view(np.uint32 if x.dtype.itemsize == 4 else np.uint64)
        per_lane = not np.isscalar(delta) and np.ndim(delta) == 1
        if lowering is None:
            lowering = "shuffle" if per_lane else self.best_lowering(width)
        if local_size is None:
            local_size = max(64, self.info["subgroup_size"])
        if words.size % local_size:
            raise ValueError(f"waveops.vulkan: len(x) = {words.size} is not a multiple of the "
                             f"work-group size {local_size}; pad x")
        dtype = "uint32" if x.dtype.itemsize == 4 else "uint64"
        mod = spirv.rotate_module(dtype, width, lowering, per_lane,
                                  self.info["shaderMaximalReconvergence"], local_size)
        if per_lane:
            delta = (np.asarray(delta).astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)
        out = self.run_module(mod, words, delta, local_size)
        self.last_lowering = lowering
        return out.view(x.dtype)

    def close(self) -> None:
        """Destroy the logical device and the instance (idempotent; ``with`` calls it)."""
        if getattr(self, "device", None):
            self.vk.vkDeviceWaitIdle(self.device)
            self.vk.vkDestroyDevice(self.device, None)
            self.device = None
        if getattr(self, "instance", None):
            self.vk.vkDestroyInstance(self.instance, None)
            self.instance = None

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
