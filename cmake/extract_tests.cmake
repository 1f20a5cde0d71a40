# Tests of the catalog extractor (tools/extract) and of the layers it
# generated (patterns/generated). The extractor is Python 3 with PyYAML
# (python3-yaml); candle's sources are not needed: the unit tests run on
# fixture files, and the committed layers are checked with `errshim lint`.
#
# Included from the top CMakeLists.txt after tools/ (it needs errshim_cli).

if(NOT ERRSHIM_BUILD_TESTS OR NOT TARGET errshim_cli)
  return()
endif()

find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import yaml" RESULT_VARIABLE _errshim_no_pyyaml
                  OUTPUT_QUIET ERROR_QUIET)
  if(_errshim_no_pyyaml EQUAL 0)
    # With ERRSHIM set, the suite also lints the layer it builds from the fixtures.
    add_test(NAME extract.unittest
             COMMAND ${Python3_EXECUTABLE} -m unittest discover -s tests -v
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tools/extract)
    set_tests_properties(extract.unittest PROPERTIES
      LABELS extract
      ENVIRONMENT "ERRSHIM=$<TARGET_FILE:errshim_cli>;PYTHONDONTWRITEBYTECODE=1")
  else()
    message(STATUS "errshim: python3 has no yaml module (python3-yaml), the extractor tests are skipped")
  endif()
else()
  message(STATUS "errshim: python3 not found, the extractor tests are skipped")
endif()

# The committed generated layers load and lint clean: candle's alone, and
# every layer on top of the hand-written catalog (whose entries win where both
# match). Lint asks the literal index which entries claim each example, so
# the second stays seconds with every layer, and every build runs it.
add_test(NAME extract.generated_layers_lint
         COMMAND errshim_cli lint ${PROJECT_SOURCE_DIR}/patterns/generated/candle.yaml)
add_test(NAME extract.generated_layers_lint_with_curated
         COMMAND errshim_cli lint ${PROJECT_SOURCE_DIR}/patterns/ ${PROJECT_SOURCE_DIR}/patterns/generated/)
set_tests_properties(extract.generated_layers_lint PROPERTIES LABELS extract)
set_tests_properties(extract.generated_layers_lint_with_curated PROPERTIES LABELS extract TIMEOUT 300)

# Real errors provoked through Debian's python3-torch (/usr/bin/python3),
# as Python shows them and with TORCH_SHOW_CPP_STACKTRACES=1: at least 60
# distinct ones, and a share >= 0.9 claimed at the file that raised them
# with the torch layers loaded. Skipped (77) without torch.
if(Python3_Interpreter_FOUND AND _errshim_no_pyyaml EQUAL 0)
  add_test(NAME extract.torch_real_errors_claimed_at_raise_file
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/torch_python/claims_test.py
                   --errshim $<TARGET_FILE:errshim_cli> --min-share 0.9 --min-distinct 60)
  set_tests_properties(extract.torch_real_errors_claimed_at_raise_file PROPERTIES
    LABELS "extract;torch;slow" SKIP_RETURN_CODE 77 TIMEOUT 900 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()
