/**
 * ctorch for the JVM: PyTorch's operators, autograd, torch.nn modules and optimizers through
 * libctorch's C API, called with the Foreign Function and Memory API (Java 22+). Run with
 * {@code --enable-native-access=org.ctorch} (or {@code ALL-UNNAMED} on the class path).
 */
module org.ctorch {
    exports org.ctorch;
    exports org.ctorch.lm;
    exports org.ctorch.nn;
    exports org.ctorch.raw;
}
