// Full prelude: gauntlet's pybind11 stub (a real pybind11, e.g. the one pip LibTorch ships,
// would need Python.h).
#pragma once
#include "../../prelude/pybind11/pybind11.h"
