"""The C source of ``sf_entries``: the fast entry every backend's executable is called through.

``sf_entries.Entry(executable, parameters, fallback, frozen=None)`` is a callable that binds
a call's positional and keyword arguments to ``parameters`` natively, then:

- if the bound arguments are indistinguishable, to the dispatcher's full argument check, from
  those of a call that check accepted for this executable (``remember(*args)``), calls
  ``executable(*bound)``;
- else calls ``fallback(*bound)`` (a self-checking entry: c_cpu's launcher, or the verdict
  memory of JAX arrays), or returns ``NotImplemented`` without running anything.

A binding that fails (unknown, repeated or missing argument) returns ``NotImplemented``: the
Python binding then explains it. What is compared, argument by argument, with a remembered
call is everything the check reads (``pipeline.dsl.arguments``, ``memory``):

- of a ``numpy.ndarray`` (the exact class): its class, data pointer, dtype object, rank,
  shape, strides and flags (writability, alignment, contiguity, ownership) and, for a view,
  the data pointer and size of the array that owns its memory, found again along the base
  chain (which cannot change), so a resized owner is noticed. Nothing is held: an array can
  be freed, or resized (NumPy refuses to resize an array that is weakly referenced), and a
  new array with all these properties gets the verdict the check gave;
- of a plain scalar (``int``, ``float``, ``bool``, NumPy number): its exact class and value;
- of an object for which ``frozen(value)`` (``allocators.frozen_metadata``) is not ``None``,
  one whose checked properties are fixed at creation (a JAX array): that it is the same,
  live object (a weak reference), of the same class.

Anything else (subclasses, tuples, arrays of other libraries, a view whose memory belongs to
an object that is not an array) is never remembered: such calls are checked in full every
time. ``remember`` of an entry without ``executable`` remembers nothing.
"""

from __future__ import annotations

__all__ = ["ENTRIES_ABI", "ENTRIES_C", "ENTRIES_MODULE"]

#: The module name of the extension.
ENTRIES_MODULE = "sf_entries"

#: The version of the Python interface below; an extension of another is never imported.
ENTRIES_ABI = 5

_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <string.h>

#define SF_SLOTS 4        /* accepted calls remembered per entry (ping-pong buffers fit) */
#define SF_MAX_RANK 8     /* arrays of higher rank are checked in full every call */
#define SF_MAX_PARAMS 256  /* keyword calls of more parameters are bound in Python */

enum { SF_EMPTY = 0, SF_ARRAY = 1, SF_SCALAR = 2, SF_FROZEN = 3 };

typedef struct {
    int kind;
    PyObject* object;      /* frozen: the argument (borrowed: identity only) */
    PyObject* held;        /* frozen: a weak reference to it; scalar: a strong reference */
    PyTypeObject* type;
    /* arrays: nothing is held; what the checks read is compared */
    void* data;
    PyArray_Descr* descr;  /* compared by address only, never read */
    int nd, flags;
    npy_intp dims[SF_MAX_RANK], strides[SF_MAX_RANK];
    int view;              /* whether the memory is another array's (the owner's) */
    void* owner_data;
    npy_intp owner_bytes;
} sf_record;

typedef struct {
    PyObject_HEAD
    PyObject* executable;  /* None: remember nothing */
    PyObject* fallback;    /* None: no fallback */
    PyObject* frozen;      /* value -> None unless its metadata cannot change; or None */
    PyObject* parameters;  /* a tuple of str */
    Py_ssize_t nparams;
    int used, next;
    sf_record* slots[SF_SLOTS];
} sf_Entry;

static void sf_clear_record(sf_record* r) {
    Py_CLEAR(r->held);
    r->kind = SF_EMPTY;
    r->object = NULL;
}

static void sf_clear_slot(sf_Entry* self, int slot) {
    for (Py_ssize_t i = 0; i < self->nparams; ++i) sf_clear_record(&self->slots[slot][i]);
}

/* The array that owns a view's memory, or NULL when the chain holds a non-array. */
static PyArrayObject* sf_owner(PyArrayObject* array) {
    PyObject* current = (PyObject*)array;
    for (int depth = 0; depth < 64; ++depth) {
        if (!PyArray_Check(current)) return NULL;
        PyArrayObject* a = (PyArrayObject*)current;
        if (PyArray_CHKFLAGS(a, NPY_ARRAY_OWNDATA)) return a;
        current = PyArray_BASE(a);
        if (current == NULL) return NULL;
    }
    return NULL;
}

static int sf_scalar_kind(PyObject* value) {
    PyTypeObject* type = Py_TYPE(value);
    if (type == &PyLong_Type || type == &PyFloat_Type || type == &PyBool_Type) return 1;
    if (type->tp_flags & Py_TPFLAGS_HEAPTYPE) return 0;  /* a user's subclass */
    return PyArray_IsScalar(value, Number) || PyArray_IsScalar(value, Bool);
}

/* Whether `frozen(value)` says that nothing the checks read of `value` can change. */
static int sf_is_frozen(PyObject* frozen, PyObject* value) {
    if (frozen == Py_None) return 0;
    PyObject* metadata = PyObject_CallOneArg(frozen, value);
    if (metadata == NULL) { PyErr_Clear(); return 0; }
    int answer = metadata != Py_None;
    Py_DECREF(metadata);
    return answer;
}

/* Record `value` into `r`: 0, or -1 when it cannot be remembered (nothing is kept). */
static int sf_record_value(sf_record* r, PyObject* value, PyObject* frozen) {
    if (PyArray_CheckExact(value)) {
        PyArrayObject* a = (PyArrayObject*)value;
        int nd = PyArray_NDIM(a);
        if (nd > SF_MAX_RANK) return -1;
        PyArrayObject* owner = a;
        if (!PyArray_CHKFLAGS(a, NPY_ARRAY_OWNDATA)) {
            owner = sf_owner(a);
            if (owner == NULL) return -1;
        }
        r->kind = SF_ARRAY;
        r->type = Py_TYPE(value);
        r->data = PyArray_DATA(a);
        r->descr = PyArray_DESCR(a);
        r->nd = nd;
        r->flags = PyArray_FLAGS(a);
        memcpy(r->dims, PyArray_DIMS(a), nd * sizeof(npy_intp));
        memcpy(r->strides, PyArray_STRIDES(a), nd * sizeof(npy_intp));
        r->view = owner != a;
        r->owner_data = PyArray_DATA(owner);
        r->owner_bytes = PyArray_NBYTES(owner);
        return 0;
    }
    if (!sf_scalar_kind(value)) {
        if (!sf_is_frozen(frozen, value)) return -1;
        PyObject* ref = PyWeakref_NewRef(value, NULL);
        if (ref == NULL) { PyErr_Clear(); return -1; }
        r->kind = SF_FROZEN;
        r->object = value;
        r->held = ref;
        r->type = Py_TYPE(value);
        return 0;
    }
    Py_INCREF(value);
    r->kind = SF_SCALAR;
    r->object = value;
    r->held = value;
    r->type = Py_TYPE(value);
    return 0;
}

static int sf_matches(const sf_record* r, PyObject* value) {
    if (r->kind == SF_ARRAY) {
        /* Not identity: an array with all these properties gets the same verdict. */
        if (Py_TYPE(value) != r->type) return 0;
        PyArrayObject* a = (PyArrayObject*)value;
        const int nd = r->nd;
        if (PyArray_DATA(a) != r->data || PyArray_DESCR(a) != r->descr ||
            PyArray_NDIM(a) != nd || PyArray_FLAGS(a) != r->flags) return 0;
        if (memcmp(PyArray_DIMS(a), r->dims, nd * sizeof(npy_intp)) != 0 ||
            memcmp(PyArray_STRIDES(a), r->strides, nd * sizeof(npy_intp)) != 0) return 0;
        if (r->view) {
            /* The base chain cannot change, but its owner may have been resized. */
            PyArrayObject* owner = sf_owner(a);
            if (owner == NULL || PyArray_DATA(owner) != r->owner_data ||
                PyArray_NBYTES(owner) != r->owner_bytes) return 0;
        }
        return 1;
    }
    if (r->kind == SF_FROZEN)
        return value == r->object && PyWeakref_GET_OBJECT(r->held) == value &&
               Py_TYPE(value) == r->type;
    if (r->kind != SF_SCALAR || Py_TYPE(value) != r->type) return 0;
    if (value == r->held) return 1;
    if (r->type == &PyFloat_Type)
        return PyFloat_AS_DOUBLE(value) == PyFloat_AS_DOUBLE(r->held);
    int equal = PyObject_RichCompareBool(value, r->held, Py_EQ);
    if (equal < 0) { PyErr_Clear(); return 0; }
    return equal;
}

/* Bind `args` and `kwargs` into `bound` (borrowed): 0, or 1 when the binding fails. */
static int sf_bind(sf_Entry* self, PyObject* args, PyObject* kwargs, PyObject** bound) {
    const Py_ssize_t n = PyTuple_GET_SIZE(args), nparams = self->nparams;
    if (n > nparams) return 1;
    for (Py_ssize_t i = 0; i < nparams; ++i) bound[i] = i < n ? PyTuple_GET_ITEM(args, i) : NULL;
    Py_ssize_t position = 0;
    PyObject *key, *value;
    while (PyDict_Next(kwargs, &position, &key, &value)) {
        Py_ssize_t found = -1;
        for (Py_ssize_t i = 0; i < nparams && found < 0; ++i)
            if (PyTuple_GET_ITEM(self->parameters, i) == key) found = i;
        for (Py_ssize_t i = 0; i < nparams && found < 0; ++i) {
            int equal = PyUnicode_Check(key)
                ? PyUnicode_Compare(PyTuple_GET_ITEM(self->parameters, i), key) : -1;
            if (equal == -1 && PyErr_Occurred()) PyErr_Clear();
            if (equal == 0) found = i;
        }
        if (found < 0 || bound[found] != NULL) return 1;
        bound[found] = value;
    }
    for (Py_ssize_t i = 0; i < nparams; ++i) if (bound[i] == NULL) return 1;
    return 0;
}

static PyObject* sf_uninitialized(void) {
    PyErr_SetString(PyExc_TypeError, "this Entry was never initialized");
    return NULL;
}

static PyObject* sf_entry_call(PyObject* object, PyObject* args, PyObject* kwargs) {
    sf_Entry* self = (sf_Entry*)object;
    if (self->parameters == NULL) return sf_uninitialized();
    const Py_ssize_t nparams = self->nparams;
    PyObject* stack[SF_MAX_PARAMS + 1];
    PyObject* const* bound;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
        if (nparams > SF_MAX_PARAMS || sf_bind(self, args, kwargs, stack) != 0)
            Py_RETURN_NOTIMPLEMENTED;
        bound = stack;
    } else {
        if (PyTuple_GET_SIZE(args) != nparams) Py_RETURN_NOTIMPLEMENTED;
        bound = &PyTuple_GET_ITEM(args, 0);
    }
    for (int slot = 0; slot < self->used; ++slot) {
        const sf_record* records = self->slots[slot];
        Py_ssize_t i = 0;
        while (i < nparams && sf_matches(&records[i], bound[i])) ++i;
        if (i == nparams) return PyObject_Vectorcall(self->executable, bound, nparams, NULL);
    }
    if (self->fallback != Py_None) return PyObject_Vectorcall(self->fallback, bound, nparams, NULL);
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject* sf_entry_call_with(PyObject* object, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "call_with(args, kwargs) takes a tuple and a dict");
        return NULL;
    }
    return sf_entry_call(object, args[0], args[1]);
}

static PyObject* sf_entry_remember(PyObject* object, PyObject* const* args, Py_ssize_t nargs) {
    sf_Entry* self = (sf_Entry*)object;
    if (self->parameters == NULL) return sf_uninitialized();
    if (self->executable == Py_None || nargs != self->nparams) Py_RETURN_FALSE;
    for (int slot = 0; slot < self->used; ++slot) {
        Py_ssize_t i = 0;
        while (i < nargs && sf_matches(&self->slots[slot][i], args[i])) ++i;
        if (i == nargs) Py_RETURN_TRUE;  /* remembered already */
    }
    int slot = self->next;
    sf_clear_slot(self, slot);
    for (Py_ssize_t i = 0; i < nargs; ++i) {
        if (sf_record_value(&self->slots[slot][i], args[i], self->frozen) != 0) {
            sf_clear_slot(self, slot);
            Py_RETURN_FALSE;
        }
    }
    self->next = (slot + 1) % SF_SLOTS;
    if (self->used < SF_SLOTS) ++self->used;
    Py_RETURN_TRUE;
}

static PyObject* sf_entry_forget(PyObject* object, PyObject* unused) {
    (void)unused;
    sf_Entry* self = (sf_Entry*)object;
    for (int slot = 0; slot < SF_SLOTS; ++slot) sf_clear_slot(self, slot);
    self->used = self->next = 0;
    Py_RETURN_NONE;
}

static int sf_entry_init(PyObject* object, PyObject* args, PyObject* kwargs) {
    sf_Entry* self = (sf_Entry*)object;
    static char* names[] = {"executable", "parameters", "fallback", "frozen", NULL};
    PyObject *executable, *parameters, *fallback, *frozen = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O|O", names, &executable, &PyTuple_Type,
                                     &parameters, &fallback, &frozen))
        return -1;
    if (self->parameters != NULL) {
        PyErr_SetString(PyExc_TypeError, "an Entry is initialized once");
        return -1;
    }
    Py_ssize_t nparams = PyTuple_GET_SIZE(parameters);
    for (Py_ssize_t i = 0; i < nparams; ++i) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(parameters, i))) {
            PyErr_SetString(PyExc_TypeError, "parameters must be a tuple of str");
            return -1;
        }
    }
    for (int slot = 0; slot < SF_SLOTS; ++slot) {
        self->slots[slot] = PyMem_Calloc(nparams > 0 ? nparams : 1, sizeof(sf_record));
        if (self->slots[slot] == NULL) { PyErr_NoMemory(); return -1; }
    }
    Py_INCREF(executable); self->executable = executable;
    Py_INCREF(fallback); self->fallback = fallback;
    Py_INCREF(frozen); self->frozen = frozen;
    Py_INCREF(parameters); self->parameters = parameters;
    self->nparams = nparams;
    return 0;
}

static void sf_entry_dealloc(PyObject* object) {
    sf_Entry* self = (sf_Entry*)object;
    for (int slot = 0; slot < SF_SLOTS; ++slot) {
        if (self->slots[slot] == NULL) continue;
        sf_clear_slot(self, slot);
        PyMem_Free(self->slots[slot]);
    }
    Py_XDECREF(self->executable);
    Py_XDECREF(self->fallback);
    Py_XDECREF(self->frozen);
    Py_XDECREF(self->parameters);
    Py_TYPE(object)->tp_free(object);
}

static PyObject* sf_entry_repr(PyObject* object) {
    sf_Entry* self = (sf_Entry*)object;
    return PyUnicode_FromFormat("<sf_entries.Entry of %R, %d call(s) remembered>",
                                self->executable, self->used);
}

static PyMethodDef sf_entry_methods[] = {
    {"remember", (PyCFunction)(void (*)(void))sf_entry_remember, METH_FASTCALL,
     "remember(*args): remember arguments the full check accepted; whether it could."},
    {"forget", sf_entry_forget, METH_NOARGS, "forget(): remember nothing."},
    {"call_with", (PyCFunction)(void (*)(void))sf_entry_call_with, METH_FASTCALL,
     "call_with(args, kwargs): entry(*args, **kwargs) without copying them."},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject sf_EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sf_entries.Entry",
    .tp_basicsize = sizeof(sf_Entry),
    .tp_dealloc = sf_entry_dealloc,
    .tp_repr = sf_entry_repr,
    .tp_call = sf_entry_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Entry(executable, parameters, fallback, frozen=None): a program's fast entry.",
    .tp_methods = sf_entry_methods,
    .tp_init = sf_entry_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef sf_entries_module = {
    PyModuleDef_HEAD_INIT, "sf_entries", "Fast entries of executables.", -1, NULL
};

PyMODINIT_FUNC PyInit_sf_entries(void) {
    import_array();
    if (PyType_Ready(&sf_EntryType) < 0) return NULL;
    PyObject* module = PyModule_Create(&sf_entries_module);
    if (module == NULL) return NULL;
    Py_INCREF(&sf_EntryType);
    if (PyModule_AddObject(module, "Entry", (PyObject*)&sf_EntryType) < 0 ||
        PyModule_AddIntConstant(module, "abi", ENTRIES_ABI_VALUE) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
"""

#: The extension's complete C source (one translation unit).
ENTRIES_C = _C.replace("ENTRIES_ABI_VALUE", str(ENTRIES_ABI))
