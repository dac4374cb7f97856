package org.ctorch;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

/**
 * Per-thread memory for a call's out-parameters and argument arrays: a slicing
 * allocator over one block, reset after each call (mark/reset, so a call made from
 * inside an upcall keeps its caller's slices), instead of an arena per call. A request
 * larger than what is left gets memory of its own, freed by the collector.
 */
final class Scratch implements SegmentAllocator {
    private static final long SIZE = 16 * 1024;
    private static final ThreadLocal<Scratch> CURRENT = ThreadLocal.withInitial(Scratch::new);

    // Every typed call begins here: the library is loaded, its ABI checked and error tickets
    // turned on before the first one (Native's initialiser uses the fields above).
    static {
        Native.init();
    }

    // Arena.ofAuto: freed with the thread's Scratch once the thread has ended (a confined
    // arena would stay allocated forever, one per virtual thread).
    private final MemorySegment block = Arena.ofAuto().allocate(SIZE, 16);
    private long top;

    static Scratch get() {
        return CURRENT.get();
    }

    long mark() {
        return top;
    }

    void reset(long mark) {
        top = mark;
    }

    @Override
    public MemorySegment allocate(long byteSize, long byteAlignment) {
        long start = (top + byteAlignment - 1) & -byteAlignment;
        if (start + byteSize > SIZE) {
            return Arena.ofAuto().allocate(Math.max(byteSize, 1), byteAlignment);
        }
        top = start + byteSize;
        return block.asSlice(start, byteSize);
    }
}
