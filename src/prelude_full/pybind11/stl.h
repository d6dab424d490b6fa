// Full prelude: gauntlet's pybind11 stub.
#pragma once
#include "../../prelude/pybind11/pybind11.h"
