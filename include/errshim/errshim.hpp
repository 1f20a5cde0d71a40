// The whole errshim C++ API.
#pragma once

#include "errshim/catalog.hpp"
#include "errshim/catalog_store.hpp"
#include "errshim/diagnosis.hpp"
#include "errshim/error.hpp"
#include "errshim/guard.hpp"
#include "errshim/importer.hpp"
#include "errshim/lint.hpp"
#include "errshim/normalize.hpp"
#include "errshim/render.hpp"
#include "errshim/version.hpp"
#include "errshim/config.hpp"
#include "errshim/context.hpp"
#include "errshim/metrics.hpp"
#include "errshim/preflight.hpp"
#include "errshim/remediation.hpp"
#include "errshim/scan.hpp"
