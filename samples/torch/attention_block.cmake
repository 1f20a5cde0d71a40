# Finds libtorch and defines errshim_torch_block (the attention block), for
# samples/torch and tests/torch alike. Sets ERRSHIM_HAVE_TORCH.
#
# Debian's libtorch-dev installs TorchConfig.cmake in
# /usr/lib/<multiarch>/cmake/Torch, which find_package searches by default;
# Torch_DIR or CMAKE_PREFIX_PATH point it at another install (e.g. an
# unpacked libtorch zip).
find_package(Torch QUIET)
get_property(_errshim_torch_recorded GLOBAL PROPERTY ERRSHIM_TORCH_RECORDED)
if(NOT _errshim_torch_recorded AND COMMAND errshim_optional_part)
  set_property(GLOBAL PROPERTY ERRSHIM_TORCH_RECORDED ON)
  errshim_optional_part("libtorch samples and tests" "${Torch_FOUND}")
endif()
if(NOT Torch_FOUND)
  set(ERRSHIM_HAVE_TORCH OFF)
  return()
endif()
set(ERRSHIM_HAVE_TORCH ON)

if(NOT TARGET errshim_torch_block)
  # The only translation unit that includes <torch/torch.h> (slow to compile);
  # its header is torch-free.
  add_library(errshim_torch_block STATIC ${CMAKE_CURRENT_LIST_DIR}/attention_block.cpp)
  target_include_directories(errshim_torch_block PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  target_compile_features(errshim_torch_block PUBLIC cxx_std_17)
  # torch is an imported target, so its headers are included as system headers
  # and their warnings stay out of -Wall -Wextra -Werror builds.
  target_link_libraries(errshim_torch_block PUBLIC ${TORCH_LIBRARIES} PRIVATE errshim_warnings)
endif()
