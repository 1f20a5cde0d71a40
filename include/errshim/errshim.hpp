// What a typical host needs: wrap a call or a catch block (guard,
// rethrow_translated), diagnose an error string, build or extend a catalog,
// read the translated error, and remediate a config under a policy.
//
// Everything else is opt-in, one header per feature, so a file that wraps a
// model call does not compile the log scanner or fmt:
//   errshim/render.hpp        text and JSON forms, fmt formatters ("{}", "{:j}")
//   errshim/observer.hpp      observe_lookups (included here through guard.hpp)
//   errshim/metrics.hpp       Metrics counters for Policy::metrics
//   errshim/catalog_store.hpp CatalogStore: hot reload
//   errshim/preflight.hpp     known errors of a config before a model load
//   errshim/scan.hpp          error blocks of a log; errshim/follow.hpp: of a growing log
//   errshim/fingerprint.hpp   one id for every copy of an unrecognised error
//   errshim/raise_site.hpp    where a message says it was raised
//   errshim/normalize.hpp     the normaliser's segments
//   errshim/lint.hpp          a catalog checked against its examples
//   errshim/draft.hpp         skeleton entries for unrecognised errors
//   errshim/importer.hpp      error-database records as catalog entries
//   errshim/prometheus.hpp    prometheus-cpp bridge (target errshim::prometheus)
//   errshim/c_api.h           the C interface (target errshim::errshim_c)
#pragma once

#include "errshim/catalog.hpp"
#include "errshim/config.hpp"
#include "errshim/context.hpp"
#include "errshim/diagnosis.hpp"
#include "errshim/error.hpp"
#include "errshim/guard.hpp"
#include "errshim/remediation.hpp"
#include "errshim/version.hpp"
