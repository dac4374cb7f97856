package org.ctorch;

/** A Java enum of one of the header's C enums (DType, Reduction, ...): its C value. */
public interface CEnum {
    /** The value C takes. */
    int cValue();
}
