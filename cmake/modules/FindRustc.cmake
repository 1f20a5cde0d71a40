# Finds rustc, which builds the Rust example on the C interface. A module so
# that -DCMAKE_DISABLE_FIND_PACKAGE_Rustc=ON switches it off like every other
# optional package. Sets Rustc_EXECUTABLE.
find_program(Rustc_EXECUTABLE rustc)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Rustc REQUIRED_VARS Rustc_EXECUTABLE)
mark_as_advanced(Rustc_EXECUTABLE)
