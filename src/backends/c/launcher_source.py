"""The C source of the launcher: the one CPython extension of the c_cpu backend.

``sf_launcher.load(path)`` opens a program's plain-C shared object, checks that its
``sf_program_descriptor`` is of this launcher's interface (``backends.c.launch_abi``) and
returns a ``Program`` whose ``run(*args)`` and ``run_disjoint(*args)`` (``METH_FASTCALL``)
check every argument natively, as the descriptor describes it (array type, rank, dtype, byte
order, alignment, writability, whole-element strides, unit stride where specialized, that the
view lies inside the buffer that owns it and, written, does not overlap itself; a scalar's
kind and range), then let the program check its domains, extents and overlaps, and return
``NotImplemented`` without touching memory when anything fails. Only then is the GIL released
and the program's stencils run. ``run_disjoint`` skips the byte-range overlap test, for
arguments the Python checks proved share no element.
"""

from __future__ import annotations

from backends.c.launch_abi import DESCRIPTOR_C, DESCRIPTOR_SYMBOL

__all__ = ["LAUNCHER_C", "LAUNCHER_MODULE"]

#: The launcher's module name (its published file is named by its key, not by this).
LAUNCHER_MODULE = "sf_launcher"

_HEADER = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <dlfcn.h>
#include <math.h>
#include <string.h>
"""

_BODY = r"""
static const int sf_npy_types[5] = {NPY_BOOL, NPY_INT32, NPY_INT64, NPY_FLOAT32, NPY_FLOAT64};
static const int64_t sf_itemsizes[5] = {1, 4, 8, 4, 8};

static inline int sf_bounds(const char* base, int nd, const int64_t* n, const int64_t* s,
                            int64_t itemsize, const char** first, const char** last) {
    /* The lowest and one-past-highest byte an array touches (empty arrays touch nothing).
       Returns -1 when the reach overflows 64 bits: such a view claims memory no buffer has. */
    int64_t lo = 0, hi = 0;
    *first = base; *last = base;
    for (int d = 0; d < nd; ++d) if (n[d] == 0) return 0;
    for (int d = 0; d < nd; ++d) {
        int64_t reach;
        if (__builtin_mul_overflow(n[d] - 1, s[d], &reach) ||
            __builtin_mul_overflow(reach, itemsize, &reach)) return -1;
        if (reach < 0 ? __builtin_add_overflow(lo, reach, &lo)
                      : __builtin_add_overflow(hi, reach, &hi)) return -1;
    }
    *first = base + lo; *last = base + hi + itemsize;
    return 0;
}

static int sf_inside_owner(PyArrayObject* array, const char* v0, const char* v1) {
    /* Whether [v0, v1) lies inside the buffer that owns the array's memory: the first array
       of its base chain that owns its data, or the first object that exports a buffer;
       objects with a `base` of their own are followed. The same walk as owner_bounds(). */
    PyObject* current = (PyObject*)array;
    PyObject* held = NULL;  /* a reference we own, from getattr */
    int inside = 0;
    for (int depth = 0; depth < 64 && current != NULL; ++depth) {
        if (PyArray_Check(current)) {
            PyArrayObject* a = (PyArrayObject*)current;
            if (PyArray_CHKFLAGS(a, NPY_ARRAY_OWNDATA)) {
                const char* start = (const char*)PyArray_DATA(a);
                inside = v0 >= start && v1 <= start + PyArray_NBYTES(a);
                break;
            }
            current = PyArray_BASE(a);
            continue;
        }
        if (PyObject_CheckBuffer(current)) {
            Py_buffer view;
            if (PyObject_GetBuffer(current, &view, PyBUF_SIMPLE) != 0) { PyErr_Clear(); break; }
            const char* start = (const char*)view.buf;
            inside = v0 >= start && v1 <= start + view.len;
            PyBuffer_Release(&view);
            break;
        }
        PyObject* base = PyObject_GetAttrString(current, "base");
        if (base == NULL) { PyErr_Clear(); break; }
        Py_XDECREF(held);
        held = base;
        current = base == Py_None ? NULL : base;
    }
    Py_XDECREF(held);
    return inside;
}

static int sf_refused_subclass(PyObject* object) {
    /* numpy.matrix and numpy.ma.MaskedArray are refused, as by the Python checks: their
       operators are not elementwise. Only subclasses get here; an unimported module's class
       cannot have instances. */
    static const char* const names[2][2] = {{"numpy", "matrix"}, {"numpy.ma", "MaskedArray"}};
    PyObject* modules = PyImport_GetModuleDict();
    for (int i = 0; i < 2; ++i) {
        PyObject* module = PyDict_GetItemString(modules, names[i][0]);
        if (module == NULL) continue;
        PyObject* type = PyObject_GetAttrString(module, names[i][1]);
        if (type == NULL) { PyErr_Clear(); continue; }
        int refused = PyObject_IsInstance(object, type);
        Py_DECREF(type);
        if (refused < 0) { PyErr_Clear(); return 1; }
        if (refused) return 1;
    }
    return 0;
}

static int sf_self_overlaps(int nd, const int64_t* n, const int64_t* s) {
    /* Whether two indices may share an address: the strides (in elements), sorted, must each
       reach past the span of the smaller ones (exact for strided layouts, else conservative).
       Called after sf_bounds succeeded, so no product here overflows. */
    int64_t stride[SF_MAX_RANK], size[SF_MAX_RANK];
    int m = 0;
    for (int d = 0; d < nd; ++d) {
        if (n[d] <= 1) continue;
        int64_t value = s[d] < 0 ? -s[d] : s[d];
        int k = m++;
        while (k > 0 && stride[k - 1] > value) { stride[k] = stride[k - 1]; size[k] = size[k - 1]; --k; }
        stride[k] = value; size[k] = n[d];
    }
    int64_t span = 1;
    for (int k = 0; k < m; ++k) {
        if (stride[k] < span) return 1;
        span += stride[k] * (size[k] - 1);
    }
    return 0;
}

/* A field argument: 0 and its pointer, shape and strides written into `args`, or 1 when any
   check fails. */
static int sf_parse_field(const sf_parameter* p, PyObject* object, int64_t* args,
                          const char** b0, const char** b1) {
    if (!PyArray_Check(object)) return 1;
    if (!PyArray_CheckExact(object) && sf_refused_subclass(object)) return 1;
    PyArrayObject* arr = (PyArrayObject*)object;
    const int rank = p->rank;
    if (PyArray_NDIM(arr) != rank || PyArray_TYPE(arr) != sf_npy_types[p->dtype] ||
        !PyArray_ISNOTSWAPPED(arr) || !PyArray_ISALIGNED(arr)) return 1;
    if (p->writable && !PyArray_ISWRITEABLE(arr)) return 1;
    char* data = (char*)PyArray_DATA(arr);
    const npy_intp* dims = PyArray_DIMS(arr);
    const npy_intp* strides = PyArray_STRIDES(arr);
    const int64_t itemsize = p->itemsize;
    /* Element sizes are powers of two (checked at load): a mask and a shift, not divisions,
       which would cost more than the rest of a small call's checks. */
    const int shift = __builtin_ctzll((unsigned long long)itemsize);
    /* Shapes and strides are int64_t members of the struct: their offsets are multiples of 8. */
    int64_t* n = args + p->shape / 8;
    int64_t* s = args + p->strides / 8;
    for (int d = 0; d < rank; ++d) {
        const int64_t stride = (int64_t)strides[d];
        if ((stride & (itemsize - 1)) != 0) return 1;
        n[d] = dims[d];
        s[d] = stride >> shift;  /* exact: stride is a multiple of itemsize */
    }
    if (p->writable && PyArray_SIZE(arr) > 0)
        for (int d = 0; d < rank; ++d) if (s[d] == 0 && n[d] > 1) return 1;
    if (p->unit_stride && rank > 0 && n[rank - 1] > 1 && s[rank - 1] != 1) return 1;
    /* The memory the view claims must be its owner's; a written view must not overlap itself. */
    if (sf_bounds(data, rank, n, s, itemsize, b0, b1) != 0) return 1;
    if (*b1 > *b0 && !sf_inside_owner(arr, *b0, *b1)) return 1;
    if (p->writable && *b1 > *b0 && sf_self_overlaps(rank, n, s)) return 1;
    memcpy((unsigned char*)args + p->pointer, &data, sizeof data);
    return 0;
}

/* A scalar argument: 0 and its value written into `args`, or 1 when it is of the wrong kind
   or out of its dtype's range. */
static int sf_parse_scalar(const sf_parameter* p, PyObject* object, unsigned char* args) {
    unsigned char* target = args + p->pointer;
    if (p->dtype == SF_BOOL) {
        if (!PyBool_Check(object)) return 1;
        unsigned char value = object == Py_True;
        memcpy(target, &value, 1);
        return 0;
    }
    if (p->dtype == SF_FLOAT32 || p->dtype == SF_FLOAT64) {
        if (!PyFloat_Check(object) && !PyLong_Check(object)) return 1;
        double value = PyFloat_AsDouble(object);
        if (value == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 1; }
        if (p->dtype == SF_FLOAT64) { memcpy(target, &value, sizeof value); return 0; }
        /* A finite double beyond float's range has no float value (the cast is undefined). */
        if (isfinite(value) && fabs(value) > 3.4028234663852886e+38) return 1;
        float narrow = (float)value;
        memcpy(target, &narrow, sizeof narrow);
        return 0;
    }
    if (!PyLong_Check(object)) return 1;
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (overflow || (value == -1 && PyErr_Occurred())) { PyErr_Clear(); return 1; }
    if (p->dtype == SF_INT64) {
        int64_t wide = (int64_t)value;
        memcpy(target, &wide, sizeof wide);
        return 0;
    }
    if (value < INT32_MIN || value > INT32_MAX) return 1;
    int32_t narrow = (int32_t)value;
    memcpy(target, &narrow, sizeof narrow);
    return 0;
}

typedef struct {
    PyObject_HEAD
    const sf_program* program;
    PyObject* path;
} sf_Program;

/* check_overlaps = 0 only through run_disjoint, which Python calls after proving with
   numpy.shares_memory that outputs whose byte ranges interleave share no element. */
static PyObject* sf_call(sf_Program* self, PyObject* const* argv, Py_ssize_t nargs,
                         int check_overlaps) {
    const sf_program* program = self->program;
    const int32_t nparams = program->nparams;
    if (nargs != nparams) Py_RETURN_NOTIMPLEMENTED;
    /* int64_t words: the argument struct's members are at most 8-byte aligned. */
    int64_t args[program->args_size / 8 + 1];
    int64_t domains[program->domains_size / 8 + 1];
    const char* bounds[2 * nparams + 2];
    for (int32_t i = 0; i < nparams; ++i) {
        const sf_parameter* p = &program->parameters[i];
        bounds[2 * i] = bounds[2 * i + 1] = NULL;
        if (p->kind == SF_FIELD
                ? sf_parse_field(p, argv[i], args, &bounds[2 * i], &bounds[2 * i + 1])
                : sf_parse_scalar(p, argv[i], (unsigned char*)args))
            Py_RETURN_NOTIMPLEMENTED;
    }
    if (program->check(args, bounds, check_overlaps, domains) != 0) Py_RETURN_NOTIMPLEMENTED;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = program->run(args, domains);
    Py_END_ALLOW_THREADS
    if (status != 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject* sf_run(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    return sf_call((sf_Program*)self, args, nargs, 1);
}

static PyObject* sf_run_disjoint(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    return sf_call((sf_Program*)self, args, nargs, 0);
}

static PyMethodDef sf_program_methods[] = {
    {"run", (PyCFunction)(void (*)(void))sf_run, METH_FASTCALL,
     "run(*args): run the program, or return NotImplemented if any argument fails a check."},
    {"run_disjoint", (PyCFunction)(void (*)(void))sf_run_disjoint, METH_FASTCALL,
     "run(*args) for arguments whose interleaved byte ranges were shown to share no element."},
    {NULL, NULL, 0, NULL}
};

static void sf_program_dealloc(PyObject* self) {
    /* The shared object stays loaded, like an extension module: its code may be running. */
    Py_XDECREF(((sf_Program*)self)->path);
    Py_TYPE(self)->tp_free(self);
}

static PyObject* sf_program_repr(PyObject* self) {
    sf_Program* program = (sf_Program*)self;
    return PyUnicode_FromFormat("<sf_launcher.Program %s from %R>", program->program->name,
                                program->path);
}

static PyTypeObject sf_ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sf_launcher.Program",
    .tp_basicsize = sizeof(sf_Program),
    .tp_dealloc = sf_program_dealloc,
    .tp_repr = sf_program_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A loaded c_cpu program: run(*args) and run_disjoint(*args).",
    .tp_methods = sf_program_methods,
};

static PyObject* sf_refuse(void* handle, PyObject* path, const char* why) {
    dlclose(handle);
    PyErr_Format(PyExc_ImportError, "%R is not a c_cpu program of this launcher: %s", path, why);
    return NULL;
}

/* The descriptor must be of this interface and describe arguments that fit its own struct:
   the launcher writes at the offsets it records. */
static const char* sf_invalid(const sf_program* program) {
    if (program->abi != SF_LAUNCH_ABI) return "it was built for another launcher interface";
    if (program->size != sizeof(sf_program) || program->parameter_size != sizeof(sf_parameter))
        return "its descriptor has another layout";
    if (program->nparams < 0 || program->args_size < 0 || program->domains_size < 0 ||
        (program->nparams > 0 && program->parameters == NULL) || program->check == NULL ||
        program->run == NULL || program->name == NULL)
        return "its descriptor is incomplete";
    for (int32_t i = 0; i < program->nparams; ++i) {
        const sf_parameter* p = &program->parameters[i];
        if (p->dtype < 0 || p->dtype > SF_FLOAT64) return "a parameter has an unknown dtype";
        if (p->kind == SF_SCALAR) {
            if (p->pointer < 0 || p->pointer + sf_itemsizes[p->dtype] > program->args_size)
                return "a scalar lies outside the argument struct";
        } else if (p->kind == SF_FIELD) {
            int64_t span = (int64_t)p->rank * 8;
            if (p->rank < 0 || p->rank > SF_MAX_RANK || p->itemsize != sf_itemsizes[p->dtype])
                return "a field has an invalid rank or element size";
            if (p->pointer < 0 || p->pointer + (int64_t)sizeof(char*) > program->args_size ||
                p->shape < 0 || p->shape + span > program->args_size || p->shape % 8 != 0 ||
                p->strides < 0 || p->strides + span > program->args_size || p->strides % 8 != 0)
                return "a field lies outside the argument struct";
        } else {
            return "a parameter is of an unknown kind";
        }
    }
    return NULL;
}

static PyObject* sf_load(PyObject* module, PyObject* arg) {
    (void)module;
    PyObject* encoded = NULL;
    if (!PyUnicode_FSConverter(arg, &encoded)) return NULL;
    void* handle = dlopen(PyBytes_AS_STRING(encoded), RTLD_NOW | RTLD_LOCAL);
    Py_DECREF(encoded);
    if (handle == NULL) {
        PyErr_Format(PyExc_ImportError, "cannot load %R: %s", arg, dlerror());
        return NULL;
    }
    const sf_program* program = (const sf_program*)dlsym(handle, "DESCRIPTOR_SYMBOL");
    if (program == NULL) return sf_refuse(handle, arg, "it exports no DESCRIPTOR_SYMBOL");
    const char* invalid = sf_invalid(program);
    if (invalid != NULL) return sf_refuse(handle, arg, invalid);
    sf_Program* loaded = PyObject_New(sf_Program, &sf_ProgramType);
    if (loaded == NULL) { dlclose(handle); return NULL; }
    loaded->program = program;
    Py_INCREF(arg);
    loaded->path = arg;
    return (PyObject*)loaded;
}

static PyMethodDef sf_launcher_methods[] = {
    {"load", sf_load, METH_O,
     "load(path): the c_cpu program in the shared object at path (ImportError if it is not one)."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef sf_launcher_module = {
    PyModuleDef_HEAD_INIT, "sf_launcher", "The c_cpu launcher.", -1, sf_launcher_methods
};

PyMODINIT_FUNC PyInit_sf_launcher(void) {
    import_array();
    if (PyType_Ready(&sf_ProgramType) < 0) return NULL;
    PyObject* module = PyModule_Create(&sf_launcher_module);
    if (module == NULL) return NULL;
    if (PyModule_AddIntConstant(module, "abi", SF_LAUNCH_ABI) < 0) { Py_DECREF(module); return NULL; }
    return module;
}
"""

#: The launcher's complete C source (one translation unit).
LAUNCHER_C = "\n".join(
    [_HEADER, DESCRIPTOR_C, _BODY.replace("DESCRIPTOR_SYMBOL", DESCRIPTOR_SYMBOL)]
)
