"""Builds the txops extension module with the project's CMake (target _txops) and packages python/txops.

The CMake build directory is $TXOPS_CMAKE_BUILD_DIR (default build-pip; `make python` passes the one `make build`
already configured, so nothing is compiled twice). setuptools' own scratch files go under build-pip/setuptools
so that they never mix with a CMake build directory named build/.
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.abspath(os.environ.get("TXOPS_CMAKE_BUILD_DIR", os.path.join(ROOT, "build-pip")))
        jobs = str(os.cpu_count() or 2)
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                                   "-DTXOPS_BUILD_PYTHON=ON", "-DTXOPS_BUILD_TESTS=OFF", "-DTXOPS_BUILD_TOOLS=OFF",
                                   f"-DPython3_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_txops", "-j", jobs])
        # CMake writes the module next to the package sources (python/txops/); ship that file.
        suffix = os.path.splitext(self.get_ext_filename(ext.name))[1]
        built = sorted(glob.glob(os.path.join(ROOT, "python", "txops", "_txops*" + suffix)), key=os.path.getmtime)
        if not built:
            raise RuntimeError(f"CMake did not produce python/txops/_txops*{suffix} (is pybind11-dev installed?)")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[-1], target)


setup(
    ext_modules=[Extension("txops._txops", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": os.path.join("build-pip", "setuptools")}},
)
