// vmstore C++ API: include this one header.
#pragma once

#include "vmstore/database.hpp"
#include "vmstore/limits.hpp"
#include "vmstore/options.hpp"
#include "vmstore/stats.hpp"
#include "vmstore/status.hpp"
#include "vmstore/tasks.hpp"
#include "vmstore/transaction.hpp"
#include "vmstore/write_batch.hpp"
