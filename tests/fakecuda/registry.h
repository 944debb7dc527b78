/*
 * fakecuda (test double): the handle registry, the global lock and the fault
 * injector, shared by the driver entry points (driver.c) and defined in
 * registry.c.
 */
#ifndef FAKECUDA_REGISTRY_H
#define FAKECUDA_REGISTRY_H

#include "fakecuda.h"

/* The one lock around all fake state (recursive, so host callbacks may call in). */
void fake_lock(void);
void fake_unlock(void);

/* Counts the call, records its name, and returns the injected error if this
 * call is chosen to fail (CUDA_SUCCESS otherwise). Takes and drops the lock. */
CUresult fake_enter(const char *name, int counted);
int fake_initialized(void);
void fake_set_initialized(void);

/* Registry (lock held). */
struct fake_object *fake_new(int kind, struct fake_object *context);
void *fake_handle(const struct fake_object *object);
/* The live object of `kind` behind `handle`; NULL (and an invalid-handle record)
 * if the handle is unknown, of another kind, or already destroyed. */
struct fake_object *fake_lookup(const void *handle, int kind);
/* fake_lookup without the record, for handles that may be of another kind. */
struct fake_object *fake_lookup_quiet(const void *handle, int kind);
/* A live explicit or (retained) primary context. */
struct fake_object *fake_lookup_context(const void *handle);
/* Marks `object` destroyed; returns CUDA_ERROR_INVALID_HANDLE (and records a
 * double free) if it already was. */
CUresult fake_destroy(struct fake_object *object);
/* Like fake_lookup for a handle being destroyed: a handle already destroyed
 * counts as a double free rather than a use after free. */
struct fake_object *fake_lookup_for_destroy(const void *handle, int kind);
void fake_release_memory(struct fake_object *object);
/* Frees what a recorded node owns (argument copies, snapshots), or a whole graph of them. */
void fake_free_node(struct fake_node *node);
void fake_free_graph(struct fake_graph *graph);
/* The objects not destroyed yet, in no order (lock held). */
size_t fake_present_count(void);
struct fake_object *fake_present_at(size_t index);
/* Destroys everything owned by `context` (counted as orphaned). */
void fake_teardown_context(struct fake_object *context);

/* Device memory by address (lock held): the live allocation whose base is
 * `address`, or NULL. A base of a freed allocation records a double free. */
struct fake_object *fake_memory_at_base(CUdeviceptr address, int kind, int *was_freed);
/* The live device or pinned host allocation containing [address, address+bytes). */
struct fake_object *fake_memory_containing(CUdeviceptr address, size_t bytes);
/* Whether `address` lies in the fake's device address range. */
int fake_is_device_address(CUdeviceptr address);
CUdeviceptr fake_reserve_address(size_t bytes);
struct fake_object *fake_primary(int device);
void fake_set_primary(int device, struct fake_object *context);
struct fake_object *fake_pool(int device);

/* Counters. */
void fake_count_live(int kind, int delta);
void fake_record_invalid(void);
void fake_record_double_free(void);
void fake_record_orphan(void);
int64_t fake_live(int kind);
/* Bytes of live device memory allocated from `pool`, or (pool NULL) on `device`. */
uint64_t fake_memory_used(int device, const struct fake_object *pool);

#endif
