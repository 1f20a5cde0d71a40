# The generated catalog layers (patterns/generated/*.yaml) are not embedded:
# each is snapshotted at build time into generated/layers/ and installed with
# its YAML in share/errshim/generated, where CatalogBuilder::add_generated()
# finds it (README, "Generated layers").
include(GNUInstallDirs)
set(ERRSHIM_GENERATED_INSTALL_DIR ${CMAKE_INSTALL_FULL_DATADIR}/errshim/generated)
# Baked into src/catalog/generated_layers.cpp alone (cmake/rooms.cmake).

file(GLOB ERRSHIM_GENERATED_LAYERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/patterns/generated/*.yaml)
set(ERRSHIM_GENERATED_LAYER_DIR ${PROJECT_BINARY_DIR}/generated/layers)
if(NOT CMAKE_CROSSCOMPILING AND ERRSHIM_GENERATED_LAYERS)
  add_executable(errshim_layer_snapshot ${PROJECT_SOURCE_DIR}/cmake/layer_snapshot.cpp)
  target_link_libraries(errshim_layer_snapshot PRIVATE errshim errshim_warnings)
  set(_snapshots)
  foreach(_yaml ${ERRSHIM_GENERATED_LAYERS})
    get_filename_component(_name ${_yaml} NAME_WE)
    set(_snap ${ERRSHIM_GENERATED_LAYER_DIR}/${_name}.snapshot)
    add_custom_command(
      OUTPUT ${_snap}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${ERRSHIM_GENERATED_LAYER_DIR}
      COMMAND ${CMAKE_COMMAND} -E copy_if_different ${_yaml} ${ERRSHIM_GENERATED_LAYER_DIR}/${_name}.yaml
      COMMAND errshim_layer_snapshot ${_snap} ${_yaml}
      DEPENDS errshim_layer_snapshot ${_yaml}
      COMMENT "Snapshotting the generated layer ${_name}"
      VERBATIM)
    list(APPEND _snapshots ${_snap})
  endforeach()
  add_custom_target(errshim_generated_layers ALL DEPENDS ${_snapshots})
  install(FILES ${_snapshots} ${ERRSHIM_GENERATED_LAYERS} DESTINATION ${CMAKE_INSTALL_DATADIR}/errshim/generated
          COMPONENT runtime)
endif()
