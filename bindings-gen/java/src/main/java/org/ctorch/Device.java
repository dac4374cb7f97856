package org.ctorch;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import org.ctorch.raw.Structs;

/** A device: its type and index (-1: the current one), as torch.device. */
public record Device(DeviceType type, int index) {
    public static final Device CPU = new Device(DeviceType.CPU, -1);

    public static Device cuda(int index) {
        return new Device(DeviceType.CUDA, index);
    }

    @Override
    public String toString() {
        String t = type.name().toLowerCase();
        return index < 0 ? t : t + ":" + index;
    }

    static MemorySegment write(SegmentAllocator a, Device d) {
        MemorySegment s = a.allocate(Structs.CTORCH_DEVICE);
        s.set(ValueLayout.JAVA_INT, Structs.CTORCH_DEVICE_TYPE, d.type.value);
        s.set(ValueLayout.JAVA_INT, Structs.CTORCH_DEVICE_INDEX, d.index);
        return s;
    }

    static Device read(MemorySegment s) {
        return new Device(DeviceType.of(s.get(ValueLayout.JAVA_INT, Structs.CTORCH_DEVICE_TYPE)),
                s.get(ValueLayout.JAVA_INT, Structs.CTORCH_DEVICE_INDEX));
    }
}
