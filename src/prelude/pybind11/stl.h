// gauntlet stand-in for <pybind11/stl.h>: the type casters are not needed without Python.
#pragma once
#include <pybind11/pybind11.h>
