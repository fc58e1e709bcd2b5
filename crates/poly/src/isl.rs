//! The one unsafe module of the polyhedral stage: a thin FFI layer over the isl library
//! (built and linked by the `isl-rs` crate, which does not bind `isl_ast_build`, mark nodes
//! or schedule-tree editing), with RAII wrappers.
//!
//! Ownership rules, stated once:
//! * every wrapper owns exactly one isl reference to a non-NULL object and frees it on drop;
//! * isl's `__isl_take` arguments are wrapper values passed by value (ownership moves into
//!   isl; the wrapper is forgotten), `__isl_keep` arguments are borrowed (`&self`), and
//!   `__isl_give` results become new wrappers;
//! * a NULL result is an isl error (or a quota overrun): it becomes [`IslError`] with the
//!   context's last message, never a wrapper;
//! * every object of a computation lives in one [`Ctx`], which outlives them: wrappers borrow
//!   the context with a lifetime.
//!
//! All computations are bounded: [`Ctx::new`] sets `isl_ctx_set_max_operations`, and an
//! overrun surfaces as an [`IslError`] whose `quota` flag is set.

#![allow(non_camel_case_types, unsafe_code)]

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_long, c_uint, c_ulong, c_void};

// Force the static isl library of isl-rs into the link.
use isl_rs as _;

/// An isl failure (a NULL result), with isl's message when it gave one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("isl: {msg}")]
pub struct IslError {
    /// What went wrong.
    pub msg: String,
    /// True when the operation bound (`isl_ctx_set_max_operations`) was exceeded.
    pub quota: bool,
}

/// Result of an isl call.
pub type IslResult<T> = Result<T, IslError>;

#[repr(C)]
struct isl_ctx {
    _p: [u8; 0],
}
macro_rules! opaque {
    ($($t:ident),*) => { $( #[repr(C)] struct $t { _p: [u8; 0] } )* };
}
opaque!(
    isl_union_set,
    isl_union_map,
    isl_set,
    isl_union_access_info,
    isl_union_flow,
    isl_schedule_constraints,
    isl_schedule,
    isl_schedule_node,
    isl_ast_build,
    isl_ast_node,
    isl_ast_node_list,
    isl_ast_expr,
    isl_id,
    isl_val,
    isl_multi_val,
    isl_space,
    isl_multi_union_pw_aff,
    isl_union_pw_aff,
    isl_pw_aff,
    isl_map,
    isl_basic_set,
    isl_basic_set_list,
    isl_constraint,
    isl_constraint_list
);

type isl_bool = c_int;
type isl_size = c_int;

extern "C" {
    fn isl_ctx_alloc() -> *mut isl_ctx;
    fn isl_ctx_free(ctx: *mut isl_ctx);
    fn isl_ctx_set_max_operations(ctx: *mut isl_ctx, max: c_ulong);
    fn isl_ctx_reset_operations(ctx: *mut isl_ctx);
    fn isl_ctx_last_error(ctx: *mut isl_ctx) -> c_int;
    fn isl_ctx_last_error_msg(ctx: *mut isl_ctx) -> *const c_char;
    fn isl_ctx_reset_error(ctx: *mut isl_ctx);
    fn isl_options_set_on_error(ctx: *mut isl_ctx, val: c_int) -> c_int;
    fn isl_options_set_schedule_serialize_sccs(ctx: *mut isl_ctx, val: c_int) -> c_int;
    fn isl_options_set_schedule_whole_component(ctx: *mut isl_ctx, val: c_int) -> c_int;
    fn isl_options_set_schedule_outer_coincidence(ctx: *mut isl_ctx, val: c_int) -> c_int;
    fn isl_options_set_schedule_maximize_band_depth(ctx: *mut isl_ctx, val: c_int) -> c_int;
    fn isl_options_set_tile_scale_tile_loops(ctx: *mut isl_ctx, val: c_int) -> c_int;
    fn isl_options_set_tile_shift_point_loops(ctx: *mut isl_ctx, val: c_int) -> c_int;
    fn isl_options_set_ast_build_atomic_upper_bound(ctx: *mut isl_ctx, val: c_int) -> c_int;
    fn isl_options_set_ast_build_prefer_pdiv(ctx: *mut isl_ctx, val: c_int) -> c_int;
    fn isl_options_set_ast_build_detect_min_max(ctx: *mut isl_ctx, val: c_int) -> c_int;

    fn free(p: *mut c_void);

    fn isl_union_set_read_from_str(ctx: *mut isl_ctx, s: *const c_char) -> *mut isl_union_set;
    fn isl_union_set_copy(s: *mut isl_union_set) -> *mut isl_union_set;
    fn isl_union_set_free(s: *mut isl_union_set) -> *mut isl_union_set;
    fn isl_union_set_to_str(s: *mut isl_union_set) -> *mut c_char;
    fn isl_union_set_union(a: *mut isl_union_set, b: *mut isl_union_set) -> *mut isl_union_set;
    fn isl_union_set_coalesce(s: *mut isl_union_set) -> *mut isl_union_set;
    fn isl_union_set_is_subset(a: *mut isl_union_set, b: *mut isl_union_set) -> isl_bool;
    fn isl_union_set_is_empty(a: *mut isl_union_set) -> isl_bool;
    fn isl_union_set_apply(s: *mut isl_union_set, m: *mut isl_union_map) -> *mut isl_union_set;
    fn isl_union_set_intersect_params(s: *mut isl_union_set, p: *mut isl_set)
        -> *mut isl_union_set;
    fn isl_union_set_n_set(s: *mut isl_union_set) -> isl_size;
    fn isl_union_set_subtract(a: *mut isl_union_set, b: *mut isl_union_set) -> *mut isl_union_set;
    fn isl_union_set_intersect(a: *mut isl_union_set, b: *mut isl_union_set) -> *mut isl_union_set;
    fn isl_union_map_intersect_range(
        m: *mut isl_union_map,
        s: *mut isl_union_set,
    ) -> *mut isl_union_map;
    fn isl_schedule_node_order_before(
        n: *mut isl_schedule_node,
        filter: *mut isl_union_set,
    ) -> *mut isl_schedule_node;
    fn isl_set_from_union_set(s: *mut isl_union_set) -> *mut isl_set;

    fn isl_set_read_from_str(ctx: *mut isl_ctx, s: *const c_char) -> *mut isl_set;
    fn isl_set_copy(s: *mut isl_set) -> *mut isl_set;
    fn isl_set_free(s: *mut isl_set) -> *mut isl_set;
    fn isl_set_to_str(s: *mut isl_set) -> *mut c_char;
    fn isl_set_intersect(a: *mut isl_set, b: *mut isl_set) -> *mut isl_set;
    fn isl_set_is_subset(a: *mut isl_set, b: *mut isl_set) -> isl_bool;
    fn isl_set_is_empty(a: *mut isl_set) -> isl_bool;
    fn isl_set_reset_tuple_id(s: *mut isl_set) -> *mut isl_set;
    fn isl_set_intersect_params(s: *mut isl_set, p: *mut isl_set) -> *mut isl_set;

    fn isl_union_map_read_from_str(ctx: *mut isl_ctx, s: *const c_char) -> *mut isl_union_map;
    fn isl_union_map_copy(m: *mut isl_union_map) -> *mut isl_union_map;
    fn isl_union_map_free(m: *mut isl_union_map) -> *mut isl_union_map;
    fn isl_union_map_to_str(m: *mut isl_union_map) -> *mut c_char;
    fn isl_union_map_union(a: *mut isl_union_map, b: *mut isl_union_map) -> *mut isl_union_map;
    fn isl_union_map_intersect(a: *mut isl_union_map, b: *mut isl_union_map) -> *mut isl_union_map;
    fn isl_union_map_subtract(a: *mut isl_union_map, b: *mut isl_union_map) -> *mut isl_union_map;
    fn isl_union_map_intersect_domain(
        m: *mut isl_union_map,
        s: *mut isl_union_set,
    ) -> *mut isl_union_map;
    fn isl_union_map_intersect_params(m: *mut isl_union_map, p: *mut isl_set)
        -> *mut isl_union_map;
    fn isl_union_map_apply_range(
        a: *mut isl_union_map,
        b: *mut isl_union_map,
    ) -> *mut isl_union_map;
    fn isl_union_map_apply_domain(
        a: *mut isl_union_map,
        b: *mut isl_union_map,
    ) -> *mut isl_union_map;
    fn isl_union_map_reverse(m: *mut isl_union_map) -> *mut isl_union_map;
    fn isl_union_map_coalesce(m: *mut isl_union_map) -> *mut isl_union_map;
    fn isl_union_map_is_empty(m: *mut isl_union_map) -> isl_bool;
    fn isl_union_map_is_subset(a: *mut isl_union_map, b: *mut isl_union_map) -> isl_bool;
    fn isl_union_map_is_single_valued(m: *mut isl_union_map) -> isl_bool;
    fn isl_union_map_deltas(m: *mut isl_union_map) -> *mut isl_union_set;
    fn isl_union_map_range(m: *mut isl_union_map) -> *mut isl_union_set;
    fn isl_union_map_lex_lt_union_map(
        a: *mut isl_union_map,
        b: *mut isl_union_map,
    ) -> *mut isl_union_map;
    fn isl_union_map_from_multi_union_pw_aff(m: *mut isl_multi_union_pw_aff) -> *mut isl_union_map;

    fn isl_union_access_info_from_sink(sink: *mut isl_union_map) -> *mut isl_union_access_info;
    fn isl_union_access_info_set_must_source(
        a: *mut isl_union_access_info,
        m: *mut isl_union_map,
    ) -> *mut isl_union_access_info;
    fn isl_union_access_info_set_may_source(
        a: *mut isl_union_access_info,
        m: *mut isl_union_map,
    ) -> *mut isl_union_access_info;
    fn isl_union_access_info_set_schedule_map(
        a: *mut isl_union_access_info,
        m: *mut isl_union_map,
    ) -> *mut isl_union_access_info;
    fn isl_union_access_info_compute_flow(a: *mut isl_union_access_info) -> *mut isl_union_flow;
    fn isl_union_map_domain(m: *mut isl_union_map) -> *mut isl_union_set;
    fn isl_union_set_lift(s: *mut isl_union_set) -> *mut isl_union_set;
    fn isl_union_set_wrapped_domain_map(s: *mut isl_union_set) -> *mut isl_union_map;
    fn isl_union_flow_get_must_dependence(f: *mut isl_union_flow) -> *mut isl_union_map;
    fn isl_union_flow_get_may_dependence(f: *mut isl_union_flow) -> *mut isl_union_map;
    fn isl_union_flow_free(f: *mut isl_union_flow) -> *mut isl_union_flow;

    fn isl_schedule_constraints_on_domain(d: *mut isl_union_set) -> *mut isl_schedule_constraints;
    fn isl_schedule_constraints_set_context(
        s: *mut isl_schedule_constraints,
        c: *mut isl_set,
    ) -> *mut isl_schedule_constraints;
    fn isl_schedule_constraints_set_validity(
        s: *mut isl_schedule_constraints,
        m: *mut isl_union_map,
    ) -> *mut isl_schedule_constraints;
    fn isl_schedule_constraints_set_proximity(
        s: *mut isl_schedule_constraints,
        m: *mut isl_union_map,
    ) -> *mut isl_schedule_constraints;
    fn isl_schedule_constraints_set_coincidence(
        s: *mut isl_schedule_constraints,
        m: *mut isl_union_map,
    ) -> *mut isl_schedule_constraints;
    fn isl_schedule_constraints_compute_schedule(
        s: *mut isl_schedule_constraints,
    ) -> *mut isl_schedule;

    fn isl_schedule_copy(s: *mut isl_schedule) -> *mut isl_schedule;
    fn isl_schedule_free(s: *mut isl_schedule) -> *mut isl_schedule;
    fn isl_schedule_to_str(s: *mut isl_schedule) -> *mut c_char;
    fn isl_schedule_get_root(s: *mut isl_schedule) -> *mut isl_schedule_node;
    fn isl_schedule_get_map(s: *mut isl_schedule) -> *mut isl_union_map;

    fn isl_schedule_node_copy(n: *mut isl_schedule_node) -> *mut isl_schedule_node;
    fn isl_schedule_node_free(n: *mut isl_schedule_node) -> *mut isl_schedule_node;
    fn isl_schedule_node_get_type(n: *mut isl_schedule_node) -> c_int;
    fn isl_schedule_node_n_children(n: *mut isl_schedule_node) -> isl_size;
    fn isl_schedule_node_child(n: *mut isl_schedule_node, pos: c_int) -> *mut isl_schedule_node;
    fn isl_schedule_node_parent(n: *mut isl_schedule_node) -> *mut isl_schedule_node;
    fn isl_schedule_node_has_parent(n: *mut isl_schedule_node) -> isl_bool;
    fn isl_schedule_node_get_schedule(n: *mut isl_schedule_node) -> *mut isl_schedule;
    fn isl_schedule_node_band_n_member(n: *mut isl_schedule_node) -> isl_size;
    fn isl_schedule_node_band_member_get_coincident(
        n: *mut isl_schedule_node,
        pos: c_int,
    ) -> isl_bool;
    fn isl_schedule_node_band_member_set_coincident(
        n: *mut isl_schedule_node,
        pos: c_int,
        c: c_int,
    ) -> *mut isl_schedule_node;
    fn isl_schedule_node_band_member_set_ast_loop_type(
        n: *mut isl_schedule_node,
        pos: c_int,
        t: c_int,
    ) -> *mut isl_schedule_node;
    fn isl_schedule_node_band_member_set_isolate_ast_loop_type(
        n: *mut isl_schedule_node,
        pos: c_int,
        t: c_int,
    ) -> *mut isl_schedule_node;
    fn isl_schedule_node_band_member_get_isolate_ast_loop_type(
        n: *mut isl_schedule_node,
        pos: c_int,
    ) -> c_int;
    fn isl_schedule_node_band_set_ast_build_options(
        n: *mut isl_schedule_node,
        options: *mut isl_union_set,
    ) -> *mut isl_schedule_node;
    fn isl_schedule_node_get_schedule_depth(n: *mut isl_schedule_node) -> isl_size;
    fn isl_schedule_node_band_member_get_ast_loop_type(
        n: *mut isl_schedule_node,
        pos: c_int,
    ) -> c_int;
    fn isl_schedule_node_band_get_permutable(n: *mut isl_schedule_node) -> isl_bool;
    fn isl_schedule_node_band_set_permutable(
        n: *mut isl_schedule_node,
        p: c_int,
    ) -> *mut isl_schedule_node;
    fn isl_schedule_node_band_tile(
        n: *mut isl_schedule_node,
        sizes: *mut isl_multi_val,
    ) -> *mut isl_schedule_node;
    fn isl_schedule_node_band_split(
        n: *mut isl_schedule_node,
        pos: c_int,
    ) -> *mut isl_schedule_node;
    fn isl_schedule_node_band_get_space(n: *mut isl_schedule_node) -> *mut isl_space;
    fn isl_schedule_node_band_get_partial_schedule(
        n: *mut isl_schedule_node,
    ) -> *mut isl_multi_union_pw_aff;
    fn isl_schedule_node_band_get_partial_schedule_union_map(
        n: *mut isl_schedule_node,
    ) -> *mut isl_union_map;
    fn isl_schedule_node_get_prefix_schedule_union_map(
        n: *mut isl_schedule_node,
    ) -> *mut isl_union_map;
    fn isl_schedule_node_get_domain(n: *mut isl_schedule_node) -> *mut isl_union_set;
    fn isl_schedule_node_insert_partial_schedule(
        n: *mut isl_schedule_node,
        s: *mut isl_multi_union_pw_aff,
    ) -> *mut isl_schedule_node;
    fn isl_schedule_node_delete(n: *mut isl_schedule_node) -> *mut isl_schedule_node;
    fn isl_schedule_node_insert_mark(
        n: *mut isl_schedule_node,
        id: *mut isl_id,
    ) -> *mut isl_schedule_node;

    fn isl_multi_union_pw_aff_copy(m: *mut isl_multi_union_pw_aff) -> *mut isl_multi_union_pw_aff;
    fn isl_multi_union_pw_aff_free(m: *mut isl_multi_union_pw_aff) -> *mut isl_multi_union_pw_aff;
    fn isl_multi_union_pw_aff_get_union_pw_aff(
        m: *mut isl_multi_union_pw_aff,
        pos: c_int,
    ) -> *mut isl_union_pw_aff;
    fn isl_multi_union_pw_aff_set_union_pw_aff(
        m: *mut isl_multi_union_pw_aff,
        pos: c_int,
        u: *mut isl_union_pw_aff,
    ) -> *mut isl_multi_union_pw_aff;
    fn isl_union_pw_aff_add(
        a: *mut isl_union_pw_aff,
        b: *mut isl_union_pw_aff,
    ) -> *mut isl_union_pw_aff;

    fn isl_multi_val_zero(space: *mut isl_space) -> *mut isl_multi_val;
    fn isl_multi_val_set_val(
        m: *mut isl_multi_val,
        pos: c_int,
        v: *mut isl_val,
    ) -> *mut isl_multi_val;
    fn isl_val_int_from_si(ctx: *mut isl_ctx, v: c_long) -> *mut isl_val;
    fn isl_val_get_num_si(v: *mut isl_val) -> c_long;
    fn isl_val_free(v: *mut isl_val) -> *mut isl_val;
    fn isl_id_alloc(ctx: *mut isl_ctx, name: *const c_char, user: *mut c_void) -> *mut isl_id;
    fn isl_id_get_name(id: *mut isl_id) -> *const c_char;
    fn isl_id_free(id: *mut isl_id) -> *mut isl_id;

    fn isl_ast_build_from_context(set: *mut isl_set) -> *mut isl_ast_build;
    fn isl_ast_build_free(b: *mut isl_ast_build) -> *mut isl_ast_build;
    fn isl_ast_build_node_from_schedule(
        b: *mut isl_ast_build,
        s: *mut isl_schedule,
    ) -> *mut isl_ast_node;
    fn isl_ast_node_free(n: *mut isl_ast_node) -> *mut isl_ast_node;
    fn isl_ast_node_to_C_str(n: *mut isl_ast_node) -> *mut c_char;
    fn isl_ast_node_get_type(n: *mut isl_ast_node) -> c_int;
    fn isl_ast_node_for_get_iterator(n: *mut isl_ast_node) -> *mut isl_ast_expr;
    fn isl_ast_node_for_get_init(n: *mut isl_ast_node) -> *mut isl_ast_expr;
    fn isl_ast_node_for_get_cond(n: *mut isl_ast_node) -> *mut isl_ast_expr;
    fn isl_ast_node_for_get_inc(n: *mut isl_ast_node) -> *mut isl_ast_expr;
    fn isl_ast_node_for_get_body(n: *mut isl_ast_node) -> *mut isl_ast_node;
    fn isl_ast_node_if_get_cond(n: *mut isl_ast_node) -> *mut isl_ast_expr;
    fn isl_ast_node_if_get_then_node(n: *mut isl_ast_node) -> *mut isl_ast_node;
    fn isl_ast_node_if_has_else_node(n: *mut isl_ast_node) -> isl_bool;
    fn isl_ast_node_if_get_else_node(n: *mut isl_ast_node) -> *mut isl_ast_node;
    fn isl_ast_node_block_get_children(n: *mut isl_ast_node) -> *mut isl_ast_node_list;
    fn isl_ast_node_list_n_ast_node(l: *mut isl_ast_node_list) -> isl_size;
    fn isl_ast_node_list_get_at(l: *mut isl_ast_node_list, i: c_int) -> *mut isl_ast_node;
    fn isl_ast_node_list_free(l: *mut isl_ast_node_list) -> *mut isl_ast_node_list;
    fn isl_ast_node_mark_get_id(n: *mut isl_ast_node) -> *mut isl_id;
    fn isl_ast_node_mark_get_node(n: *mut isl_ast_node) -> *mut isl_ast_node;
    fn isl_ast_node_user_get_expr(n: *mut isl_ast_node) -> *mut isl_ast_expr;
    fn isl_ast_expr_free(e: *mut isl_ast_expr) -> *mut isl_ast_expr;
    fn isl_ast_expr_get_type(e: *mut isl_ast_expr) -> c_int;
    fn isl_ast_expr_get_op_type(e: *mut isl_ast_expr) -> c_int;
    fn isl_ast_expr_get_op_n_arg(e: *mut isl_ast_expr) -> isl_size;
    fn isl_ast_expr_get_op_arg(e: *mut isl_ast_expr, pos: c_int) -> *mut isl_ast_expr;
    fn isl_ast_expr_get_id(e: *mut isl_ast_expr) -> *mut isl_id;
    fn isl_ast_expr_get_val(e: *mut isl_ast_expr) -> *mut isl_val;
    fn isl_set_dim(s: *mut isl_set, ty: c_int) -> isl_size;
    fn isl_set_dim_min(s: *mut isl_set, pos: c_int) -> *mut isl_pw_aff;
    fn isl_set_dim_max(s: *mut isl_set, pos: c_int) -> *mut isl_pw_aff;
    fn isl_set_dim_min_val(s: *mut isl_set, pos: c_int) -> *mut isl_val;
    fn isl_set_dim_max_val(s: *mut isl_set, pos: c_int) -> *mut isl_val;
    fn isl_ast_build_expr_from_pw_aff(
        b: *mut isl_ast_build,
        p: *mut isl_pw_aff,
    ) -> *mut isl_ast_expr;
    fn isl_ast_build_set_before_each_for(
        b: *mut isl_ast_build,
        f: unsafe extern "C" fn(*mut isl_ast_build, *mut c_void) -> *mut isl_id,
        user: *mut c_void,
    ) -> *mut isl_ast_build;
    fn isl_ast_build_set_after_each_for(
        b: *mut isl_ast_build,
        f: unsafe extern "C" fn(
            *mut isl_ast_node,
            *mut isl_ast_build,
            *mut c_void,
        ) -> *mut isl_ast_node,
        user: *mut c_void,
    ) -> *mut isl_ast_build;
    fn isl_ast_build_set_before_each_mark(
        b: *mut isl_ast_build,
        f: unsafe extern "C" fn(*mut isl_id, *mut isl_ast_build, *mut c_void) -> c_int,
        user: *mut c_void,
    ) -> *mut isl_ast_build;
    fn isl_ast_build_get_schedule(b: *mut isl_ast_build) -> *mut isl_union_map;
    fn isl_ast_node_get_annotation(n: *mut isl_ast_node) -> *mut isl_id;
    fn isl_union_map_n_map(m: *mut isl_union_map) -> isl_size;
    fn isl_map_from_union_map(m: *mut isl_union_map) -> *mut isl_map;
    fn isl_map_dim(m: *mut isl_map, ty: c_int) -> isl_size;
    fn isl_map_equate(m: *mut isl_map, t1: c_int, p1: c_int, t2: c_int, p2: c_int) -> *mut isl_map;
    fn isl_map_copy(m: *mut isl_map) -> *mut isl_map;
    fn isl_map_is_subset(a: *mut isl_map, b: *mut isl_map) -> isl_bool;
    fn isl_map_free(m: *mut isl_map) -> *mut isl_map;

    fn isl_union_set_params(s: *mut isl_union_set) -> *mut isl_set;
    fn isl_set_gist(s: *mut isl_set, context: *mut isl_set) -> *mut isl_set;
    fn isl_set_remove_divs(s: *mut isl_set) -> *mut isl_set;
    fn isl_set_coalesce(s: *mut isl_set) -> *mut isl_set;
    fn isl_set_get_dim_name(s: *mut isl_set, ty: c_int, pos: c_uint) -> *const c_char;
    fn isl_set_get_basic_set_list(s: *mut isl_set) -> *mut isl_basic_set_list;
    fn isl_basic_set_list_size(l: *mut isl_basic_set_list) -> isl_size;
    fn isl_basic_set_list_get_at(l: *mut isl_basic_set_list, i: c_int) -> *mut isl_basic_set;
    fn isl_basic_set_list_free(l: *mut isl_basic_set_list) -> *mut isl_basic_set_list;
    fn isl_basic_set_get_constraint_list(b: *mut isl_basic_set) -> *mut isl_constraint_list;
    fn isl_basic_set_free(b: *mut isl_basic_set) -> *mut isl_basic_set;
    fn isl_constraint_list_size(l: *mut isl_constraint_list) -> isl_size;
    fn isl_constraint_list_get_at(l: *mut isl_constraint_list, i: c_int) -> *mut isl_constraint;
    fn isl_constraint_list_free(l: *mut isl_constraint_list) -> *mut isl_constraint_list;
    fn isl_constraint_is_equality(c: *mut isl_constraint) -> isl_bool;
    fn isl_constraint_get_constant_val(c: *mut isl_constraint) -> *mut isl_val;
    fn isl_constraint_get_coefficient_val(
        c: *mut isl_constraint,
        ty: c_int,
        pos: c_int,
    ) -> *mut isl_val;
    fn isl_constraint_free(c: *mut isl_constraint) -> *mut isl_constraint;
    fn isl_val_cmp_si(v: *mut isl_val, i: c_long) -> c_int;
    fn isl_set_project_out(s: *mut isl_set, ty: c_int, first: c_uint, n: c_uint) -> *mut isl_set;
    fn isl_set_make_disjoint(s: *mut isl_set) -> *mut isl_set;
    fn isl_basic_set_dim(b: *mut isl_basic_set, ty: c_int) -> isl_size;
    fn isl_set_count_val(s: *mut isl_set) -> *mut isl_val;
    fn isl_val_is_int(v: *mut isl_val) -> isl_bool;
}

/// `isl_dim_param`, `isl_dim_in`, `isl_dim_out`.
const ISL_DIM_PARAM: c_int = 1;
const ISL_DIM_IN: c_int = 2;
const ISL_DIM_OUT: c_int = 3;

/// `isl_dim_set` (= `isl_dim_out`; `isl_dim_cst`, `param`, `in` come first).
const ISL_DIM_SET: c_int = 3;
const ISL_DIM_DIV: c_int = 4;

const ISL_ON_ERROR_CONTINUE: c_int = 1;
const ISL_ERROR_QUOTA: c_int = 6;

/// An isl context with a bound on the operations of each computation.
pub struct Ctx {
    raw: *mut isl_ctx,
}

impl Ctx {
    /// A context whose computations stop after `max_operations` elementary isl operations
    /// (counted from the last [`Ctx::reset_operations`]).
    pub fn new(max_operations: u64) -> IslResult<Ctx> {
        // SAFETY: plain allocation; checked for NULL.
        let raw = unsafe { isl_ctx_alloc() };
        if raw.is_null() {
            return Err(IslError {
                msg: "isl_ctx_alloc failed".into(),
                quota: false,
            });
        }
        // SAFETY: raw is a valid context.
        unsafe {
            isl_options_set_on_error(raw, ISL_ON_ERROR_CONTINUE);
            isl_ctx_set_max_operations(raw, max_operations as c_ulong);
            isl_options_set_tile_scale_tile_loops(raw, 0);
            isl_options_set_tile_shift_point_loops(raw, 0);
            isl_options_set_ast_build_atomic_upper_bound(raw, 1);
            isl_options_set_ast_build_prefer_pdiv(raw, 1);
            isl_options_set_ast_build_detect_min_max(raw, 0);
        }
        Ok(Ctx { raw })
    }

    /// Runs `f` under its own bound of `ops` elementary operations (counted from zero), then
    /// restores the bound `restore` with a fresh count. `f`'s overrun is an [`IslError`]
    /// with `quota` set, and the context stays usable.
    pub fn bounded<R>(
        &self,
        ops: u64,
        restore: u64,
        f: impl FnOnce() -> IslResult<R>,
    ) -> IslResult<R> {
        // SAFETY: valid context.
        unsafe {
            isl_ctx_reset_operations(self.raw);
            isl_ctx_set_max_operations(self.raw, ops as c_ulong);
        }
        let r = f();
        // SAFETY: valid context.
        unsafe {
            isl_ctx_reset_error(self.raw);
            isl_ctx_set_max_operations(self.raw, restore as c_ulong);
            isl_ctx_reset_operations(self.raw);
        }
        r
    }

    /// Restarts the operation count.
    pub fn reset_operations(&self) {
        // SAFETY: valid context.
        unsafe { isl_ctx_reset_operations(self.raw) }
    }

    /// Scheduler options: `serialize_sccs` (no fusion of strongly connected components),
    /// `whole_component` (schedule whole components at once: maximal fusion).
    pub fn set_fusion(&self, serialize_sccs: bool, whole_component: bool) {
        // SAFETY: valid context.
        unsafe {
            isl_options_set_schedule_serialize_sccs(self.raw, serialize_sccs as c_int);
            isl_options_set_schedule_whole_component(self.raw, whole_component as c_int);
            isl_options_set_schedule_outer_coincidence(self.raw, 0);
            isl_options_set_schedule_maximize_band_depth(self.raw, 1);
        }
    }

    /// Scheduler option `outer_coincidence`: the outermost member of every band must be
    /// coincident (parallel) where possible, splitting bands (and giving up permutability)
    /// to get it.
    pub fn set_outer_coincidence(&self, on: bool) {
        // SAFETY: valid context.
        unsafe {
            isl_options_set_schedule_outer_coincidence(self.raw, on as c_int);
        }
    }

    fn error(&self, what: &str) -> IslError {
        // SAFETY: valid context; the message pointer is owned by isl and copied at once.
        unsafe {
            let code = isl_ctx_last_error(self.raw);
            let p = isl_ctx_last_error_msg(self.raw);
            let msg = if p.is_null() {
                "unknown error".to_string()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            };
            isl_ctx_reset_error(self.raw);
            let quota = code == ISL_ERROR_QUOTA;
            IslError {
                msg: if quota {
                    format!("{what}: operation bound exceeded ({msg})")
                } else {
                    format!("{what}: {msg}")
                },
                quota,
            }
        }
    }

    fn check<T>(&self, p: *mut T, what: &str) -> IslResult<*mut T> {
        if p.is_null() {
            Err(self.error(what))
        } else {
            Ok(p)
        }
    }

    fn bool(&self, b: isl_bool, what: &str) -> IslResult<bool> {
        match b {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.error(what)),
        }
    }

    /// Parses a union set.
    pub fn union_set(&self, s: &str) -> IslResult<USet<'_>> {
        let c = cstr(s)?;
        // SAFETY: valid context and NUL-terminated string.
        let p = unsafe { isl_union_set_read_from_str(self.raw, c.as_ptr()) };
        Ok(USet {
            raw: self.check(p, "parse union set")?,
            ctx: self,
        })
    }

    /// Parses a union map.
    pub fn union_map(&self, s: &str) -> IslResult<UMap<'_>> {
        let c = cstr(s)?;
        // SAFETY: as above.
        let p = unsafe { isl_union_map_read_from_str(self.raw, c.as_ptr()) };
        Ok(UMap {
            raw: self.check(p, "parse union map")?,
            ctx: self,
        })
    }

    /// Parses a set.
    pub fn set(&self, s: &str) -> IslResult<Set<'_>> {
        let c = cstr(s)?;
        // SAFETY: as above.
        let p = unsafe { isl_set_read_from_str(self.raw, c.as_ptr()) };
        Ok(Set {
            raw: self.check(p, "parse set")?,
            ctx: self,
        })
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: every wrapper borrows the context, so none outlives it.
        unsafe { isl_ctx_free(self.raw) }
    }
}

fn cstr(s: &str) -> IslResult<CString> {
    CString::new(s).map_err(|_| IslError {
        msg: "string with NUL byte".into(),
        quota: false,
    })
}

/// Takes an isl-allocated string.
///
/// # Safety
/// `p` is NULL or a string allocated by isl with malloc, owned by the caller.
unsafe fn take_str(p: *mut c_char) -> String {
    if p.is_null() {
        return "<isl error>".into();
    }
    let s = CStr::from_ptr(p).to_string_lossy().into_owned();
    free(p as *mut c_void);
    s
}

macro_rules! wrapper {
    ($name:ident, $raw:ident, $copy:ident, $free:ident $(, $to_str:ident)?) => {
        /// RAII owner of one isl reference (see the module docs).
        pub struct $name<'c> {
            raw: *mut $raw,
            ctx: &'c Ctx,
        }
        impl<'c> $name<'c> {
            /// Gives up ownership to an isl `__isl_take` argument.
            fn take(self) -> *mut $raw {
                let p = self.raw;
                std::mem::forget(self);
                p
            }
            /// The context the object lives in.
            #[allow(dead_code)]
            pub fn ctx(&self) -> &'c Ctx {
                self.ctx
            }
            #[allow(dead_code)]
            fn wrap(ctx: &'c Ctx, p: *mut $raw, what: &str) -> IslResult<Self> {
                Ok($name { raw: ctx.check(p, what)?, ctx })
            }
        }
        impl Clone for $name<'_> {
            fn clone(&self) -> Self {
                // SAFETY: valid object; copy returns a new reference (NULL only on
                // allocation failure, which isl reports by aborting the copy: checked).
                let p = unsafe { $copy(self.raw) };
                assert!(!p.is_null(), "isl copy failed");
                $name { raw: p, ctx: self.ctx }
            }
        }
        impl Drop for $name<'_> {
            fn drop(&mut self) {
                // SAFETY: we own one reference.
                unsafe { $free(self.raw); }
            }
        }
        $(
        impl std::fmt::Display for $name<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                // SAFETY: valid object; the string is ours to free (take_str).
                let s = unsafe { take_str($to_str(self.raw)) };
                f.write_str(&s)
            }
        }
        )?
    };
}

wrapper!(
    USet,
    isl_union_set,
    isl_union_set_copy,
    isl_union_set_free,
    isl_union_set_to_str
);
wrapper!(
    UMap,
    isl_union_map,
    isl_union_map_copy,
    isl_union_map_free,
    isl_union_map_to_str
);
wrapper!(Set, isl_set, isl_set_copy, isl_set_free, isl_set_to_str);
wrapper!(
    Schedule,
    isl_schedule,
    isl_schedule_copy,
    isl_schedule_free,
    isl_schedule_to_str
);
wrapper!(
    SNode,
    isl_schedule_node,
    isl_schedule_node_copy,
    isl_schedule_node_free
);
wrapper!(
    Mupa,
    isl_multi_union_pw_aff,
    isl_multi_union_pw_aff_copy,
    isl_multi_union_pw_aff_free
);

impl<'c> USet<'c> {
    /// Intersection.
    pub fn intersect(self, o: USet<'c>) -> IslResult<USet<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        USet::wrap(
            c,
            unsafe { isl_union_set_intersect(self.take(), o.take()) },
            "intersect",
        )
    }
    /// Difference.
    pub fn subtract(self, o: USet<'c>) -> IslResult<USet<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        USet::wrap(
            c,
            unsafe { isl_union_set_subtract(self.take(), o.take()) },
            "subtract",
        )
    }
    /// Union.
    pub fn union(self, o: USet<'c>) -> IslResult<USet<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        USet::wrap(
            c,
            unsafe { isl_union_set_union(self.take(), o.take()) },
            "union",
        )
    }
    /// Simplified representation.
    pub fn coalesce(self) -> IslResult<USet<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        USet::wrap(
            c,
            unsafe { isl_union_set_coalesce(self.take()) },
            "coalesce",
        )
    }
    /// Subset test.
    pub fn is_subset(&self, o: &USet<'c>) -> IslResult<bool> {
        // SAFETY: both kept.
        self.ctx.bool(
            unsafe { isl_union_set_is_subset(self.raw, o.raw) },
            "is_subset",
        )
    }
    /// Emptiness test.
    pub fn is_empty(&self) -> IslResult<bool> {
        // SAFETY: kept.
        self.ctx
            .bool(unsafe { isl_union_set_is_empty(self.raw) }, "is_empty")
    }
    /// The image under a map.
    pub fn apply(self, m: UMap<'c>) -> IslResult<USet<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        USet::wrap(
            c,
            unsafe { isl_union_set_apply(self.take(), m.take()) },
            "apply",
        )
    }
    /// Adds parameter constraints.
    pub fn intersect_params(self, p: Set<'c>) -> IslResult<USet<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        USet::wrap(
            c,
            unsafe { isl_union_set_intersect_params(self.take(), p.take()) },
            "intersect_params",
        )
    }
    /// Number of sets (spaces) in the union.
    pub fn n_set(&self) -> IslResult<usize> {
        // SAFETY: kept.
        let n = unsafe { isl_union_set_n_set(self.raw) };
        if n < 0 {
            Err(self.ctx.error("n_set"))
        } else {
            Ok(n as usize)
        }
    }
    /// The parameter values for which the union is non-empty.
    pub fn params(self) -> IslResult<Set<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        Set::wrap(c, unsafe { isl_union_set_params(self.take()) }, "params")
    }
    /// The single set of a union over one space.
    pub fn to_set(self) -> IslResult<Set<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        Set::wrap(
            c,
            unsafe { isl_set_from_union_set(self.take()) },
            "from_union_set",
        )
    }
}

impl<'c> Set<'c> {
    /// Intersection (parameters are aligned).
    pub fn intersect(self, o: Set<'c>) -> IslResult<Set<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        Set::wrap(
            c,
            unsafe { isl_set_intersect(self.take(), o.take()) },
            "intersect",
        )
    }
    /// Adds parameter constraints.
    pub fn intersect_params(self, p: Set<'c>) -> IslResult<Set<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        Set::wrap(
            c,
            unsafe { isl_set_intersect_params(self.take(), p.take()) },
            "intersect_params",
        )
    }
    /// Subset test.
    pub fn is_subset(&self, o: &Set<'c>) -> IslResult<bool> {
        // SAFETY: both kept.
        self.ctx
            .bool(unsafe { isl_set_is_subset(self.raw, o.raw) }, "is_subset")
    }
    /// Emptiness test.
    pub fn is_empty(&self) -> IslResult<bool> {
        // SAFETY: kept.
        self.ctx
            .bool(unsafe { isl_set_is_empty(self.raw) }, "is_empty")
    }
    /// The bounding box of the set: per dimension, its least and greatest value as AST
    /// expressions over the parameters (built under `context`; isl's `dim_min`/`dim_max`,
    /// piecewise where the bound is, as `min`/`max`/`?:`). Where the set is empty for some
    /// parameter values the expressions may take any value there.
    pub fn bounding_box(&self, context: &Set<'c>) -> IslResult<Vec<(AstExpr, AstExpr)>> {
        let c = self.ctx;
        // SAFETY: `self` and `context` are kept (copies are taken); every pw_aff is taken by
        // expr_from_pw_aff, every expression converted and freed, the build freed last.
        unsafe {
            let n = isl_set_dim(self.raw, ISL_DIM_SET);
            if n < 0 {
                return Err(c.error("set dim"));
            }
            let b = c.check(
                isl_ast_build_from_context(isl_set_copy(context.raw)),
                "ast_build",
            )?;
            let mut out = Vec::new();
            let mut res = Ok(());
            for d in 0..n {
                let one = |max: bool| -> IslResult<AstExpr> {
                    let s = isl_set_copy(self.raw);
                    let pa = if max {
                        isl_set_dim_max(s, d)
                    } else {
                        isl_set_dim_min(s, d)
                    };
                    let pa = c.check(pa, "dim bound")?;
                    let e = c.check(isl_ast_build_expr_from_pw_aff(b, pa), "expr_from_pw_aff")?;
                    let r = convert_expr(c, e);
                    isl_ast_expr_free(e);
                    r
                };
                match one(false).and_then(|lo| Ok((lo, one(true)?))) {
                    Ok(x) => out.push(x),
                    Err(e) => {
                        res = Err(e);
                        break;
                    }
                }
            }
            isl_ast_build_free(b);
            res.map(|_| out)
        }
    }
    /// Simplifies `self` under the assumption that `context` holds (isl's `gist`).
    pub fn gist(self, context: Set<'c>) -> IslResult<Set<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        Set::wrap(
            c,
            unsafe { isl_set_gist(self.take(), context.take()) },
            "gist",
        )
    }
    /// Drops the existentially quantified variables (a superset: their constraints go).
    pub fn remove_divs(self) -> IslResult<Set<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        Set::wrap(
            c,
            unsafe { isl_set_remove_divs(self.take()) },
            "remove_divs",
        )
    }
    /// Simplified representation.
    pub fn coalesce(self) -> IslResult<Set<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        Set::wrap(c, unsafe { isl_set_coalesce(self.take()) }, "coalesce")
    }
    /// The constraints of a parameter set without existentially quantified variables, per
    /// disjunct: `(coefficients by parameter name, constant, equality)` meaning
    /// `Σ k·p + c >= 0` (`= 0` for an equality). A value beyond `±limit` gives `None`.
    #[allow(clippy::type_complexity)]
    pub fn param_constraints(
        &self,
        limit: i64,
    ) -> IslResult<Option<Vec<Vec<(Vec<(String, i64)>, i64, bool)>>>> {
        let Some((names, rows)) = self.constraints(ISL_DIM_PARAM, limit)? else {
            return Ok(None);
        };
        Ok(Some(
            rows.into_iter()
                .map(|conj| {
                    conj.into_iter()
                        .map(|(k, c0, eq)| {
                            let terms = names
                                .iter()
                                .zip(k)
                                .filter(|(_, x)| *x != 0)
                                .map(|(n, x)| (n.clone(), x))
                                .collect();
                            (terms, c0, eq)
                        })
                        .collect()
                })
                .collect(),
        ))
    }

    /// The constraints of a set without parameters, per disjunct, over its set dimensions:
    /// `(coefficients, constant, equality)` meaning `Σ k·x + c >= 0` (`= 0` for an equality).
    /// `None` if a disjunct has existentially quantified variables or a value lies beyond
    /// `±limit`.
    #[allow(clippy::type_complexity)]
    pub fn dim_constraints(
        &self,
        limit: i64,
    ) -> IslResult<Option<Vec<Vec<(Vec<i64>, i64, bool)>>>> {
        // SAFETY: kept.
        let np = unsafe { isl_set_dim(self.raw, ISL_DIM_PARAM) };
        if np != 0 {
            return Err(self.ctx.error("dim_constraints: the set has parameters"));
        }
        Ok(self.constraints(ISL_DIM_SET, limit)?.map(|(_, rows)| rows))
    }

    /// The constraints of every disjunct over the dimensions of type `ty`, with their names
    /// (empty where unnamed).
    #[allow(clippy::type_complexity)]
    fn constraints(
        &self,
        ty: c_int,
        limit: i64,
    ) -> IslResult<Option<(Vec<String>, Vec<Vec<(Vec<i64>, i64, bool)>>)>> {
        let c = self.ctx;
        // SAFETY: `self` is kept; every list, basic set, constraint and value obtained here
        // is a new reference, freed before returning (on every path, through the guards).
        unsafe {
            struct Free<T>(*mut T, unsafe extern "C" fn(*mut T) -> *mut T);
            impl<T> Drop for Free<T> {
                fn drop(&mut self) {
                    // SAFETY: an owned, non-NULL reference.
                    unsafe {
                        (self.1)(self.0);
                    }
                }
            }
            let np = isl_set_dim(self.raw, ty);
            if np < 0 {
                return Err(c.error("set dim"));
            }
            let mut names = Vec::new();
            for i in 0..np {
                let p = isl_set_get_dim_name(self.raw, ty, i as c_uint);
                names.push(if p.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(p).to_string_lossy().into_owned()
                });
            }
            let val = |v: *mut isl_val| -> IslResult<Option<i64>> {
                let v = Free(c.check(v, "constraint value")?, isl_val_free);
                if isl_val_cmp_si(v.0, limit as c_long) > 0
                    || isl_val_cmp_si(v.0, -limit as c_long) < 0
                {
                    return Ok(None);
                }
                Ok(Some(isl_val_get_num_si(v.0)))
            };
            let list = Free(
                c.check(isl_set_get_basic_set_list(self.raw), "basic sets")?,
                isl_basic_set_list_free,
            );
            let nb = isl_basic_set_list_size(list.0);
            if nb < 0 {
                return Err(c.error("basic set list"));
            }
            let mut out = Vec::new();
            for b in 0..nb {
                let bs = Free(
                    c.check(isl_basic_set_list_get_at(list.0, b), "basic set")?,
                    isl_basic_set_free,
                );
                if isl_basic_set_dim(bs.0, ISL_DIM_DIV) != 0 {
                    return Ok(None);
                }
                let cl = Free(
                    c.check(isl_basic_set_get_constraint_list(bs.0), "constraints")?,
                    isl_constraint_list_free,
                );
                let nc = isl_constraint_list_size(cl.0);
                if nc < 0 {
                    return Err(c.error("constraint list"));
                }
                let mut conj = Vec::new();
                for k in 0..nc {
                    let con = Free(
                        c.check(isl_constraint_list_get_at(cl.0, k), "constraint")?,
                        isl_constraint_free,
                    );
                    let eq = c.bool(isl_constraint_is_equality(con.0), "is_equality")?;
                    let Some(k0) = val(isl_constraint_get_constant_val(con.0))? else {
                        return Ok(None);
                    };
                    let mut coef = Vec::with_capacity(names.len());
                    for i in 0..names.len() {
                        let Some(x) =
                            val(isl_constraint_get_coefficient_val(con.0, ty, i as c_int))?
                        else {
                            return Ok(None);
                        };
                        coef.push(x);
                    }
                    conj.push((coef, k0, eq));
                }
                out.push(conj);
            }
            Ok(Some((names, out)))
        }
    }

    /// Removes every parameter (existentially: the set of points for some parameter value).
    pub fn project_out_params(self) -> IslResult<Set<'c>> {
        let c = self.ctx;
        // SAFETY: kept for the query, then taken.
        let np = unsafe { isl_set_dim(self.raw, ISL_DIM_PARAM) };
        if np < 0 {
            return Err(c.error("set dim"));
        }
        Set::wrap(
            c,
            unsafe { isl_set_project_out(self.take(), ISL_DIM_PARAM, 0, np as c_uint) },
            "project_out",
        )
    }

    /// The same set as a union of pairwise disjoint basic sets.
    pub fn make_disjoint(self) -> IslResult<Set<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        Set::wrap(
            c,
            unsafe { isl_set_make_disjoint(self.take()) },
            "make_disjoint",
        )
    }

    /// isl's own count of the points of a set without parameters (by enumeration: for
    /// tests and small sets). `None` if it does not fit an `i64`.
    pub fn count_by_enumeration(&self) -> IslResult<Option<i64>> {
        let c = self.ctx;
        // SAFETY: kept; the value is a new reference, freed here.
        unsafe {
            let v = c.check(isl_set_count_val(self.raw), "count_val")?;
            let ok = isl_val_is_int(v) == 1
                && isl_val_cmp_si(v, c_long::MAX) < 0
                && isl_val_cmp_si(v, 0) >= 0;
            let n = isl_val_get_num_si(v);
            isl_val_free(v);
            Ok(ok.then_some(n))
        }
    }

    /// The number of set dimensions.
    pub fn n_dim(&self) -> IslResult<usize> {
        // SAFETY: kept.
        let n = unsafe { isl_set_dim(self.raw, ISL_DIM_SET) };
        if n < 0 {
            Err(self.ctx.error("set dim"))
        } else {
            Ok(n as usize)
        }
    }

    /// The least and the greatest value of dimension `d` of a non-empty set without
    /// parameters (isl's `dim_min_val`/`dim_max_val`); `None` when a bound is infinite or
    /// beyond `i64`.
    pub fn dim_range(&self, d: usize) -> IslResult<Option<(i64, i64)>> {
        let c = self.ctx;
        // SAFETY: a copy of `self` is taken by each call; each value is a new reference,
        // freed here.
        unsafe {
            let one = |max: bool| -> IslResult<Option<i64>> {
                let s = isl_set_copy(self.raw);
                let v = if max {
                    isl_set_dim_max_val(s, d as c_int)
                } else {
                    isl_set_dim_min_val(s, d as c_int)
                };
                let v = c.check(v, "dim_min_val/dim_max_val")?;
                let ok = isl_val_is_int(v) == 1
                    && isl_val_cmp_si(v, c_long::MAX) < 0
                    && isl_val_cmp_si(v, c_long::MIN) > 0;
                let n = isl_val_get_num_si(v);
                isl_val_free(v);
                Ok(ok.then_some(n as i64))
            };
            Ok(match (one(false)?, one(true)?) {
                (Some(lo), Some(hi)) => Some((lo, hi)),
                _ => None,
            })
        }
    }

    /// Drops the tuple name.
    pub fn reset_tuple_id(self) -> IslResult<Set<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        Set::wrap(
            c,
            unsafe { isl_set_reset_tuple_id(self.take()) },
            "reset_tuple_id",
        )
    }
}

impl<'c> UMap<'c> {
    /// Union.
    pub fn union(self, o: UMap<'c>) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_union(self.take(), o.take()) },
            "union",
        )
    }
    /// Intersection.
    pub fn intersect(self, o: UMap<'c>) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_intersect(self.take(), o.take()) },
            "intersect",
        )
    }
    /// Difference.
    pub fn subtract(self, o: UMap<'c>) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_subtract(self.take(), o.take()) },
            "subtract",
        )
    }
    /// Restricts the domain.
    pub fn intersect_domain(self, s: USet<'c>) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_intersect_domain(self.take(), s.take()) },
            "intersect_domain",
        )
    }
    /// Adds parameter constraints.
    pub fn intersect_params(self, p: Set<'c>) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_intersect_params(self.take(), p.take()) },
            "intersect_params",
        )
    }
    /// Composition: `self` then `o`.
    pub fn apply_range(self, o: UMap<'c>) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_apply_range(self.take(), o.take()) },
            "apply_range",
        )
    }
    /// Maps the domain through `o`.
    pub fn apply_domain(self, o: UMap<'c>) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_apply_domain(self.take(), o.take()) },
            "apply_domain",
        )
    }
    /// Inverse relation.
    pub fn reverse(self) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        UMap::wrap(c, unsafe { isl_union_map_reverse(self.take()) }, "reverse")
    }
    /// Simplified representation.
    pub fn coalesce(self) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_coalesce(self.take()) },
            "coalesce",
        )
    }
    /// Emptiness test.
    pub fn is_empty(&self) -> IslResult<bool> {
        // SAFETY: kept.
        self.ctx
            .bool(unsafe { isl_union_map_is_empty(self.raw) }, "is_empty")
    }
    /// Subset test.
    pub fn is_subset(&self, o: &UMap<'c>) -> IslResult<bool> {
        // SAFETY: both kept.
        self.ctx.bool(
            unsafe { isl_union_map_is_subset(self.raw, o.raw) },
            "is_subset",
        )
    }
    /// Whether every domain element has at most one image.
    pub fn is_single_valued(&self) -> IslResult<bool> {
        // SAFETY: kept.
        self.ctx.bool(
            unsafe { isl_union_map_is_single_valued(self.raw) },
            "is_single_valued",
        )
    }
    /// Restricts the range.
    pub fn intersect_range(self, s: USet<'c>) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_intersect_range(self.take(), s.take()) },
            "intersect_range",
        )
    }
    /// The differences `y - x` of the pairs `x -> y` (same space on both sides).
    pub fn deltas(self) -> IslResult<USet<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        USet::wrap(c, unsafe { isl_union_map_deltas(self.take()) }, "deltas")
    }
    /// The range.
    pub fn range(self) -> IslResult<USet<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        USet::wrap(c, unsafe { isl_union_map_range(self.take()) }, "range")
    }
    /// The domain.
    pub fn domain(self) -> IslResult<USet<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        USet::wrap(c, unsafe { isl_union_map_domain(self.take()) }, "domain")
    }
    /// For two maps to time (schedules): the pairs `a -> b` with `self(a)` lexicographically
    /// before `o(b)`.
    pub fn lex_lt(self, o: UMap<'c>) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_lex_lt_union_map(self.take(), o.take()) },
            "lex_lt",
        )
    }
}

/// Exact dataflow: the must and may dependences from `sources` to `sink` accesses.
///
/// isl's dataflow analysis is not handed the statement domains as they are: their
/// existentially quantified variables (the `exists e: i = lb + s*e` of loops with a step
/// other than ±1) are first lifted into explicit dimensions of every statement instance
/// (`isl_union_set_lift`: `S[i]` becomes `[S[i] -> local[e]]`), the flow is computed in
/// that space, where the domains have no local variables, and the dependences are mapped
/// back by projection. The result is the same relation; the detour exists because isl 0.27
/// (and the isl of islpy 2026.2) indexes out of bounds in `align_context_divs`
/// (isl_tab_pip.c) when two integer divisions of a parametric lexmax's context match the
/// same division of the map, which strided domains produce (a SIGSEGV found by the opt random tester; its input is
/// the unit test `strided_domains_flow`).
pub fn compute_flow<'c>(
    sink: UMap<'c>,
    must_source: UMap<'c>,
    may_source: UMap<'c>,
    schedule_map: UMap<'c>,
) -> IslResult<(UMap<'c>, UMap<'c>)> {
    let c = sink.ctx;
    // SAFETY: each call takes its argument; NULL is checked by `wrap`.
    let (lifted_to, from_lifted) = unsafe {
        let domain =
            |m: &UMap<'c>| USet::wrap(c, isl_union_map_domain(m.clone().take()), "flow domain");
        let dom = domain(&schedule_map)?
            .union(domain(&sink)?)?
            .union(domain(&must_source)?)?
            .union(domain(&may_source)?)?;
        let lifted = USet::wrap(c, isl_union_set_lift(dom.take()), "lift")?;
        let proj = UMap::wrap(
            c,
            isl_union_set_wrapped_domain_map(lifted.take()),
            "wrapped domain map",
        )?;
        (proj.clone().reverse()?, proj)
    };
    let (must, may) = compute_flow_raw(
        sink.apply_domain(lifted_to.clone())?,
        must_source.apply_domain(lifted_to.clone())?,
        may_source.apply_domain(lifted_to.clone())?,
        schedule_map.apply_domain(lifted_to)?,
    )?;
    let back = |m: UMap<'c>| -> IslResult<UMap<'c>> {
        m.apply_domain(from_lifted.clone())?
            .apply_range(from_lifted.clone())
    };
    Ok((back(must)?, back(may)?))
}

/// [`compute_flow`] without the lifting of local variables.
fn compute_flow_raw<'c>(
    sink: UMap<'c>,
    must_source: UMap<'c>,
    may_source: UMap<'c>,
    schedule_map: UMap<'c>,
) -> IslResult<(UMap<'c>, UMap<'c>)> {
    let c = sink.ctx;
    // SAFETY: each call takes its arguments; NULL is checked before the next use.
    unsafe {
        let a = c.check(isl_union_access_info_from_sink(sink.take()), "access info")?;
        let a = c.check(
            isl_union_access_info_set_must_source(a, must_source.take()),
            "must",
        )?;
        let a = c.check(
            isl_union_access_info_set_may_source(a, may_source.take()),
            "may",
        )?;
        let a = c.check(
            isl_union_access_info_set_schedule_map(a, schedule_map.take()),
            "sched",
        )?;
        let f = c.check(isl_union_access_info_compute_flow(a), "compute_flow")?;
        let must = isl_union_flow_get_must_dependence(f);
        let may = isl_union_flow_get_may_dependence(f);
        isl_union_flow_free(f);
        let must = UMap::wrap(c, must, "must dependence");
        let may = UMap::wrap(c, may, "may dependence");
        Ok((must?, may?))
    }
}

/// Runs isl's scheduler on `domain` with the given constraints.
pub fn compute_schedule<'c>(
    domain: USet<'c>,
    context: Set<'c>,
    validity: UMap<'c>,
    proximity: UMap<'c>,
    coincidence: UMap<'c>,
) -> IslResult<Schedule<'c>> {
    let c = domain.ctx;
    // SAFETY: as in compute_flow.
    unsafe {
        let s = c.check(
            isl_schedule_constraints_on_domain(domain.take()),
            "constraints",
        )?;
        let s = c.check(
            isl_schedule_constraints_set_context(s, context.take()),
            "context",
        )?;
        let s = c.check(
            isl_schedule_constraints_set_validity(s, validity.take()),
            "validity",
        )?;
        let s = c.check(
            isl_schedule_constraints_set_proximity(s, proximity.take()),
            "prox",
        )?;
        let s = c.check(
            isl_schedule_constraints_set_coincidence(s, coincidence.take()),
            "coincidence",
        )?;
        Schedule::wrap(
            c,
            isl_schedule_constraints_compute_schedule(s),
            "compute_schedule",
        )
    }
}

/// Kinds of schedule tree nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A band of schedule dimensions.
    Band,
    /// A context node.
    Context,
    /// The root domain.
    Domain,
    /// An expansion node.
    Expansion,
    /// An extension node.
    Extension,
    /// A filter.
    Filter,
    /// A leaf.
    Leaf,
    /// A guard.
    Guard,
    /// A mark.
    Mark,
    /// An ordered sequence of filters.
    Sequence,
    /// An unordered set of filters.
    SetNode,
}

impl<'c> Schedule<'c> {
    /// The root of the schedule tree.
    pub fn root(&self) -> IslResult<SNode<'c>> {
        // SAFETY: kept.
        SNode::wrap(
            self.ctx,
            unsafe { isl_schedule_get_root(self.raw) },
            "get_root",
        )
    }
    /// The schedule as a flat map from statement instances to time.
    pub fn map(&self) -> IslResult<UMap<'c>> {
        // SAFETY: kept.
        UMap::wrap(
            self.ctx,
            unsafe { isl_schedule_get_map(self.raw) },
            "get_map",
        )
    }
}

impl<'c> SNode<'c> {
    /// Node kind.
    pub fn kind(&self) -> IslResult<NodeKind> {
        // SAFETY: kept.
        let t = unsafe { isl_schedule_node_get_type(self.raw) };
        use NodeKind::*;
        Ok(match t {
            0 => Band,
            1 => Context,
            2 => Domain,
            3 => Expansion,
            4 => Extension,
            5 => Filter,
            6 => Leaf,
            7 => Guard,
            8 => Mark,
            9 => Sequence,
            10 => SetNode,
            _ => return Err(self.ctx.error("node type")),
        })
    }
    /// Number of children.
    pub fn n_children(&self) -> IslResult<usize> {
        // SAFETY: kept.
        let n = unsafe { isl_schedule_node_n_children(self.raw) };
        if n < 0 {
            Err(self.ctx.error("n_children"))
        } else {
            Ok(n as usize)
        }
    }
    /// Moves to child `i`.
    pub fn child(self, i: usize) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        SNode::wrap(
            c,
            unsafe { isl_schedule_node_child(self.take(), i as c_int) },
            "child",
        )
    }
    /// Moves to the parent.
    pub fn parent(self) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        SNode::wrap(
            c,
            unsafe { isl_schedule_node_parent(self.take()) },
            "parent",
        )
    }
    /// Whether the node has a parent.
    pub fn has_parent(&self) -> IslResult<bool> {
        // SAFETY: kept.
        self.ctx.bool(
            unsafe { isl_schedule_node_has_parent(self.raw) },
            "has_parent",
        )
    }
    /// The whole (modified) schedule this node belongs to.
    pub fn schedule(&self) -> IslResult<Schedule<'c>> {
        // SAFETY: kept.
        Schedule::wrap(
            self.ctx,
            unsafe { isl_schedule_node_get_schedule(self.raw) },
            "schedule",
        )
    }
    /// Band: number of members.
    pub fn band_n_member(&self) -> IslResult<usize> {
        // SAFETY: kept.
        let n = unsafe { isl_schedule_node_band_n_member(self.raw) };
        if n < 0 {
            Err(self.ctx.error("band_n_member"))
        } else {
            Ok(n as usize)
        }
    }
    /// Band: whether member `i` is coincident.
    pub fn band_coincident(&self, i: usize) -> IslResult<bool> {
        // SAFETY: kept.
        self.ctx.bool(
            unsafe { isl_schedule_node_band_member_get_coincident(self.raw, i as c_int) },
            "get_coincident",
        )
    }
    /// Band: sets member `i`'s coincident flag.
    pub fn band_set_coincident(self, i: usize, v: bool) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        SNode::wrap(
            c,
            unsafe {
                isl_schedule_node_band_member_set_coincident(self.take(), i as c_int, v as c_int)
            },
            "set_coincident",
        )
    }
    /// Band: asks the AST generator to separate member `i`'s loop into pieces with one
    /// set of statements and one lower and upper bound each (`isl_ast_loop_separate`), so
    /// no test on outer counters is left inside it.
    pub fn band_set_separate(self, i: usize) -> IslResult<SNode<'c>> {
        const ISL_AST_LOOP_SEPARATE: c_int = 3;
        self.band_set_loop_type(i, ISL_AST_LOOP_SEPARATE)
    }
    /// Band: asks the AST generator for one `atomic` loop of member `i` in the isolated
    /// part of the band (see [`SNode::band_set_isolate`]) only: no separation of it there.
    pub fn band_set_isolate_atomic(self, i: usize) -> IslResult<SNode<'c>> {
        const ISL_AST_LOOP_ATOMIC: c_int = 1;
        let c = self.ctx;
        // SAFETY: taken.
        SNode::wrap(
            c,
            unsafe {
                isl_schedule_node_band_member_set_isolate_ast_loop_type(
                    self.take(),
                    i as c_int,
                    ISL_AST_LOOP_ATOMIC,
                )
            },
            "set_isolate_ast_loop_type",
        )
    }
    /// Splits the instances reaching this node into those in `filter`, which run first,
    /// and the others (a sequence of two copies of the subtree). The result points at the
    /// copy of the others (isl's `order_before`).
    pub fn order_before(self, filter: USet<'c>) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        SNode::wrap(
            c,
            unsafe { isl_schedule_node_order_before(self.take(), filter.take()) },
            "order_before",
        )
    }
    /// Band: whether member `i` has a loop type of its own in the isolated part of the band.
    pub fn band_isolate_typed(&self, i: usize) -> IslResult<bool> {
        // SAFETY: kept.
        let t = unsafe {
            isl_schedule_node_band_member_get_isolate_ast_loop_type(self.raw, i as c_int)
        };
        if t < 0 {
            return Err(self.ctx.error("get_isolate_ast_loop_type"));
        }
        Ok(t != 0)
    }
    /// Band: sets the AST build options to the `isolate` option `iso`, a set of the form
    /// `isolate[[P] -> [B]]` (`P` the outer schedule dimensions, `B` the band's members):
    /// the AST generator builds the isolated instances apart from the rest, with the
    /// isolated loop types (`band_set_isolate_atomic`). Replaces the band's other options.
    pub fn band_set_isolate(self, iso: USet<'c>) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        // SAFETY: both taken.
        SNode::wrap(
            c,
            unsafe { isl_schedule_node_band_set_ast_build_options(self.take(), iso.take()) },
            "set_ast_build_options",
        )
    }
    /// The number of schedule dimensions of the bands above this node.
    pub fn schedule_depth(&self) -> IslResult<usize> {
        // SAFETY: kept.
        let d = unsafe { isl_schedule_node_get_schedule_depth(self.raw) };
        if d < 0 {
            return Err(self.ctx.error("schedule depth"));
        }
        Ok(d as usize)
    }
    /// Band: whether member `i` has the default AST loop type (no separate/unroll request).
    pub fn band_default_loop_type(&self, i: usize) -> IslResult<bool> {
        // SAFETY: kept; the node pointer is valid for the life of `self`.
        let t = unsafe { isl_schedule_node_band_member_get_ast_loop_type(self.raw, i as c_int) };
        if t < 0 {
            return Err(self.ctx.error("get_ast_loop_type"));
        }
        Ok(t == 0)
    }
    fn band_set_loop_type(self, i: usize, t: c_int) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        SNode::wrap(
            c,
            unsafe { isl_schedule_node_band_member_set_ast_loop_type(self.take(), i as c_int, t) },
            "set_ast_loop_type",
        )
    }
    /// Band: whether the band is permutable.
    pub fn band_permutable(&self) -> IslResult<bool> {
        // SAFETY: kept.
        self.ctx.bool(
            unsafe { isl_schedule_node_band_get_permutable(self.raw) },
            "permutable",
        )
    }
    /// Band: sets the permutable flag.
    pub fn band_set_permutable(self, v: bool) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        SNode::wrap(
            c,
            unsafe { isl_schedule_node_band_set_permutable(self.take(), v as c_int) },
            "set_permutable",
        )
    }
    /// Band: tiles with the given sizes (one per member); the node becomes the tile band,
    /// whose child is the point band.
    pub fn band_tile(self, sizes: &[i64]) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        // SAFETY: the space is given to multi_val_zero, each val to set_val; node taken.
        unsafe {
            let space = c.check(isl_schedule_node_band_get_space(self.raw), "band space")?;
            let mut mv = c.check(isl_multi_val_zero(space), "multi_val")?;
            for (i, &s) in sizes.iter().enumerate() {
                let v = c.check(isl_val_int_from_si(c.raw, s as c_long), "val")?;
                mv = c.check(isl_multi_val_set_val(mv, i as c_int, v), "set_val")?;
            }
            SNode::wrap(c, isl_schedule_node_band_tile(self.take(), mv), "band_tile")
        }
    }
    /// Band: splits after `pos` members; the node keeps the first `pos`.
    pub fn band_split(self, pos: usize) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        // SAFETY: taken.
        SNode::wrap(
            c,
            unsafe { isl_schedule_node_band_split(self.take(), pos as c_int) },
            "split",
        )
    }
    /// Band: the partial schedule.
    pub fn band_partial(&self) -> IslResult<Mupa<'c>> {
        // SAFETY: kept.
        Mupa::wrap(
            self.ctx,
            unsafe { isl_schedule_node_band_get_partial_schedule(self.raw) },
            "partial schedule",
        )
    }
    /// Band: the partial schedule as a union map.
    pub fn band_partial_map(&self) -> IslResult<UMap<'c>> {
        // SAFETY: kept.
        UMap::wrap(
            self.ctx,
            unsafe { isl_schedule_node_band_get_partial_schedule_union_map(self.raw) },
            "partial schedule map",
        )
    }
    /// The schedule of the outer nodes, as a map.
    pub fn prefix_map(&self) -> IslResult<UMap<'c>> {
        // SAFETY: kept.
        UMap::wrap(
            self.ctx,
            unsafe { isl_schedule_node_get_prefix_schedule_union_map(self.raw) },
            "prefix schedule",
        )
    }
    /// The statement instances that reach this node.
    pub fn domain(&self) -> IslResult<USet<'c>> {
        // SAFETY: kept.
        USet::wrap(
            self.ctx,
            unsafe { isl_schedule_node_get_domain(self.raw) },
            "node domain",
        )
    }
    /// Replaces this band by one with schedule `s` (flags reset).
    pub fn replace_band(self, s: Mupa<'c>) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        // SAFETY: node and schedule taken; NULL checked in between.
        unsafe {
            let n = c.check(isl_schedule_node_delete(self.take()), "delete")?;
            SNode::wrap(
                c,
                isl_schedule_node_insert_partial_schedule(n, s.take()),
                "insert band",
            )
        }
    }
    /// Inserts a mark node named `name` above this node (the result points at the mark).
    pub fn insert_mark(self, name: &str) -> IslResult<SNode<'c>> {
        let c = self.ctx;
        let cs = cstr(name)?;
        // SAFETY: id allocated (name copied by isl) and taken with the node.
        unsafe {
            let id = c.check(isl_id_alloc(c.raw, cs.as_ptr(), std::ptr::null_mut()), "id")?;
            SNode::wrap(
                c,
                isl_schedule_node_insert_mark(self.take(), id),
                "insert_mark",
            )
        }
    }
}

impl<'c> Mupa<'c> {
    /// Replaces member `dst` by the sum of members `dst` and `src` (a skew).
    pub fn add_member(self, dst: usize, src: usize) -> IslResult<Mupa<'c>> {
        let c = self.ctx;
        // SAFETY: the getters give new references, add takes both, set takes the sum.
        unsafe {
            let a = c.check(
                isl_multi_union_pw_aff_get_union_pw_aff(self.raw, dst as c_int),
                "get member",
            )?;
            let b = isl_multi_union_pw_aff_get_union_pw_aff(self.raw, src as c_int);
            let s = c.check(isl_union_pw_aff_add(a, b), "add")?;
            Mupa::wrap(
                c,
                isl_multi_union_pw_aff_set_union_pw_aff(self.take(), dst as c_int, s),
                "set member",
            )
        }
    }
    /// The members reordered: member `k` of the result is member `order[k]` of `self`.
    pub fn permute(&self, order: &[usize]) -> IslResult<Mupa<'c>> {
        let c = self.ctx;
        let mut out = self.clone();
        for (dst, &src) in order.iter().enumerate() {
            // SAFETY: the getter gives a new reference (NULL checked), set takes it and `out`.
            unsafe {
                let m = c.check(
                    isl_multi_union_pw_aff_get_union_pw_aff(self.raw, src as c_int),
                    "get member",
                )?;
                out = Mupa::wrap(
                    c,
                    isl_multi_union_pw_aff_set_union_pw_aff(out.take(), dst as c_int, m),
                    "set member",
                )?;
            }
        }
        Ok(out)
    }
    /// As a union map.
    pub fn to_map(&self) -> IslResult<UMap<'c>> {
        let c = self.ctx;
        // SAFETY: a copy is taken.
        UMap::wrap(
            c,
            unsafe { isl_union_map_from_multi_union_pw_aff(self.clone().take()) },
            "mupa to map",
        )
    }
}

/// An AST expression, converted out of isl.
#[derive(Debug, Clone, PartialEq)]
pub enum AstExpr {
    /// An integer.
    Int(i64),
    /// An identifier (loop iterator or parameter).
    Id(String),
    /// An operation with its isl operator and arguments.
    Op(AstOp, Vec<AstExpr>),
}

impl std::fmt::Display for AstExpr {
    /// C-like text: `n - 1`, `min(n, 8 * c0 + 7)`, `floord(n - 1, 8)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |f: &mut std::fmt::Formatter<'_>, name: &str, args: &[AstExpr]| {
            write!(f, "{name}(")?;
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{a}")?;
            }
            write!(f, ")")
        };
        match self {
            AstExpr::Int(v) => write!(f, "{v}"),
            AstExpr::Id(s) => write!(f, "{s}"),
            AstExpr::Op(op, a) => {
                let bin = |f: &mut std::fmt::Formatter<'_>, s: &str| match a.as_slice() {
                    [x, y] => write!(f, "({x} {s} {y})"),
                    _ => list(f, s, a),
                };
                match op {
                    AstOp::Add => bin(f, "+"),
                    AstOp::Sub => bin(f, "-"),
                    AstOp::Mul => bin(f, "*"),
                    AstOp::Div | AstOp::PdivQ => bin(f, "/"),
                    AstOp::PdivR | AstOp::ZdivR => bin(f, "%"),
                    AstOp::And => bin(f, "&&"),
                    AstOp::Or => bin(f, "||"),
                    AstOp::Eq => bin(f, "=="),
                    AstOp::Le => bin(f, "<="),
                    AstOp::Lt => bin(f, "<"),
                    AstOp::Ge => bin(f, ">="),
                    AstOp::Gt => bin(f, ">"),
                    AstOp::Minus => match a.as_slice() {
                        [x] => write!(f, "-{x}"),
                        _ => list(f, "-", a),
                    },
                    AstOp::Max => list(f, "max", a),
                    AstOp::Min => list(f, "min", a),
                    AstOp::FdivQ => list(f, "floord", a),
                    AstOp::Cond => match a.as_slice() {
                        [c, x, y] => write!(f, "({c} ? {x} : {y})"),
                        _ => list(f, "?:", a),
                    },
                    AstOp::Call => list(f, "call", a),
                }
            }
        }
    }
}

/// isl AST operators (the subset isl generates for our schedules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AstOp {
    /// `&&` (both forms)
    And,
    /// `||` (both forms)
    Or,
    /// max
    Max,
    /// min
    Min,
    /// unary minus
    Minus,
    /// +
    Add,
    /// -
    Sub,
    /// *
    Mul,
    /// exact division
    Div,
    /// floor division
    FdivQ,
    /// division with non-negative dividend
    PdivQ,
    /// remainder with non-negative dividend
    PdivR,
    /// remainder only compared with zero
    ZdivR,
    /// `c ? a : b` (both forms)
    Cond,
    /// ==
    Eq,
    /// <=
    Le,
    /// <
    Lt,
    /// >=
    Ge,
    /// >
    Gt,
    /// a call: the statement name is the first argument
    Call,
}

/// An AST node, converted out of isl.
#[derive(Debug, Clone, PartialEq)]
pub enum Ast {
    /// `for (it = init; cond; it += inc) body`
    For {
        /// Iterator name.
        it: String,
        /// Initial value.
        init: AstExpr,
        /// Loop condition.
        cond: AstExpr,
        /// Increment.
        inc: AstExpr,
        /// Body.
        body: Box<Ast>,
        /// No dependence is carried by this loop: checked exactly on the final schedule,
        /// as the AST is built (see [`ast_from_schedule`]).
        parallel: bool,
    },
    /// `if`
    If(AstExpr, Box<Ast>, Option<Box<Ast>>),
    /// A sequence.
    Block(Vec<Ast>),
    /// A mark with its name.
    Mark(String, Box<Ast>),
    /// A statement instance: the call expression.
    User(AstExpr),
}

/// Generates the AST of `schedule` under parameter `context`; returns the converted tree and
/// isl's own C rendering of it.
///
/// Every `for` node at the depth of the latest `parallel` mark (the loops of the marked
/// band, and at worst a loop after them at the same depth) is checked for parallelism as isl
/// builds it (as Polly does): with the build's schedule `σ` of the instances inside the loop
/// (the enclosing loops and this one), the loop is parallel iff every dependence `a → b` of
/// `deps` with `σ(a)` and `σ(b)` equal in the enclosing dimensions is also equal in this
/// one. The check runs on the final schedule, after tiling, register tiles and separation,
/// so a mark that ends up on another loop than intended is caught; [`Ast::For::parallel`]
/// holds the result (false for loops not checked: only a marked loop may run in parallel,
/// and the check can cost isl seconds on the loops inside time tiles).
pub fn ast_from_schedule<'c>(
    context: Set<'c>,
    schedule: Schedule<'c>,
    deps: &UMap<'c>,
) -> IslResult<(Ast, String)> {
    let c = context.ctx;
    let mut user = ParCheck {
        ctx: c.raw,
        deps: deps.raw,
        open: 0,
        mark: None,
    };
    // SAFETY: build takes the context; node_from_schedule keeps the build, takes the
    // schedule; every object is freed before returning. `user` outlives the build (the
    // callback runs only inside node_from_schedule) and `deps` is kept by the callback.
    unsafe {
        let b = c.check(isl_ast_build_from_context(context.take()), "ast_build")?;
        let b = c.check(
            isl_ast_build_set_before_each_for(
                b,
                before_each_for,
                &mut user as *mut ParCheck as *mut c_void,
            ),
            "ast_build callback",
        )?;
        let b = c.check(
            isl_ast_build_set_after_each_for(
                b,
                after_each_for,
                &mut user as *mut ParCheck as *mut c_void,
            ),
            "ast_build callback",
        )?;
        let b = c.check(
            isl_ast_build_set_before_each_mark(
                b,
                before_each_mark,
                &mut user as *mut ParCheck as *mut c_void,
            ),
            "ast_build callback",
        )?;
        let n = isl_ast_build_node_from_schedule(b, schedule.take());
        isl_ast_build_free(b);
        let n = c.check(n, "ast from schedule")?;
        let text = take_str(isl_ast_node_to_C_str(n));
        let ast = convert_node(c, n);
        isl_ast_node_free(n);
        Ok((ast?, text))
    }
}

struct ParCheck {
    ctx: *mut isl_ctx,
    deps: *mut isl_union_map,
    /// `for` nodes being built (isl calls `before_each_for` before a loop's body and
    /// `after_each_for` after it, both where the loop is not eliminated).
    open: usize,
    /// The depth (`open`) of the latest `parallel` mark, until a loop outside it starts.
    mark: Option<usize>,
}

/// isl's `before_each_mark` callback: records the depth of a `parallel` mark.
///
/// # Safety
/// `user` is the `ParCheck` of [`ast_from_schedule`]; `mark` is valid (kept).
unsafe extern "C" fn before_each_mark(
    mark: *mut isl_id,
    _build: *mut isl_ast_build,
    user: *mut c_void,
) -> c_int {
    let pc = &mut *(user as *mut ParCheck);
    if id_name(mark) == "parallel" {
        pc.mark = Some(pc.open);
    }
    0
}

/// isl's `after_each_for` callback: the loop's body is built.
///
/// # Safety
/// `user` is the `ParCheck` of [`ast_from_schedule`].
unsafe extern "C" fn after_each_for(
    node: *mut isl_ast_node,
    _build: *mut isl_ast_build,
    user: *mut c_void,
) -> *mut isl_ast_node {
    let pc = &mut *(user as *mut ParCheck);
    pc.open = pc.open.saturating_sub(1);
    node
}

/// isl's `before_each_for` callback: an id `parallel` or `sequential` for the loop about to
/// be generated; NULL (an error that fails the build) where isl failed.
///
/// # Safety
/// `user` is the `ParCheck` of [`ast_from_schedule`]; `build` is valid (kept).
unsafe extern "C" fn before_each_for(build: *mut isl_ast_build, user: *mut c_void) -> *mut isl_id {
    let pc = &mut *(user as *mut ParCheck);
    let depth = pc.open;
    pc.open += 1;
    let marked = match pc.mark {
        Some(m) if m == depth => true,
        Some(m) if m > depth => {
            // A loop outside the marked subtree.
            pc.mark = None;
            false
        }
        _ => false,
    };
    let par = if marked {
        loop_is_parallel(build, pc.deps)
    } else {
        0
    };
    if par < 0 {
        return std::ptr::null_mut();
    }
    let name: &[u8] = if par == 1 {
        b"parallel\0"
    } else {
        b"sequential\0"
    };
    isl_id_alloc(pc.ctx, name.as_ptr() as *const c_char, std::ptr::null_mut())
}

/// 1 when the innermost dimension of the build's schedule carries no dependence of `deps`,
/// 0 when it may, -1 on an isl error.
///
/// # Safety
/// `build` and `deps` are valid (kept).
unsafe fn loop_is_parallel(build: *mut isl_ast_build, deps: *mut isl_union_map) -> c_int {
    let sched = isl_ast_build_get_schedule(build);
    if sched.is_null() {
        return -1;
    }
    let d = isl_union_map_apply_domain(isl_union_map_copy(deps), isl_union_map_copy(sched));
    let d = isl_union_map_apply_range(d, sched);
    if d.is_null() {
        return -1;
    }
    match isl_union_map_is_empty(d) {
        1 => {
            isl_union_map_free(d);
            return 1;
        }
        0 => {}
        _ => {
            isl_union_map_free(d);
            return -1;
        }
    }
    let n = isl_union_map_n_map(d);
    if n != 1 {
        // Pairs in several spaces: not a single loop dimension to compare (conservative).
        isl_union_map_free(d);
        return if n < 0 { -1 } else { 0 };
    }
    let mut m = isl_map_from_union_map(d);
    if m.is_null() {
        return -1;
    }
    let dim = isl_map_dim(m, ISL_DIM_OUT);
    if dim < 1 || isl_map_dim(m, ISL_DIM_IN) != dim {
        isl_map_free(m);
        return if dim < 0 { -1 } else { 0 };
    }
    for i in 0..dim - 1 {
        m = isl_map_equate(m, ISL_DIM_IN, i, ISL_DIM_OUT, i);
    }
    if m.is_null() {
        return -1;
    }
    let same = isl_map_equate(isl_map_copy(m), ISL_DIM_IN, dim - 1, ISL_DIM_OUT, dim - 1);
    if same.is_null() {
        isl_map_free(m);
        return -1;
    }
    let r = isl_map_is_subset(m, same);
    isl_map_free(m);
    isl_map_free(same);
    r
}

/// # Safety
/// `n` is a valid node (kept).
unsafe fn convert_node(c: &Ctx, n: *mut isl_ast_node) -> IslResult<Ast> {
    // Each getter gives a new reference, freed here after conversion.
    unsafe fn expr(c: &Ctx, e: *mut isl_ast_expr) -> IslResult<AstExpr> {
        let e = c.check(e, "ast expr")?;
        let r = convert_expr(c, e);
        isl_ast_expr_free(e);
        r
    }
    unsafe fn node(c: &Ctx, n: *mut isl_ast_node) -> IslResult<Ast> {
        let n = c.check(n, "ast node")?;
        let r = convert_node(c, n);
        isl_ast_node_free(n);
        r
    }
    match isl_ast_node_get_type(n) {
        1 => {
            let it = match expr(c, isl_ast_node_for_get_iterator(n))? {
                AstExpr::Id(s) => s,
                other => {
                    return Err(IslError {
                        msg: format!("for iterator is not an identifier: {other:?}"),
                        quota: false,
                    })
                }
            };
            Ok(Ast::For {
                it,
                init: expr(c, isl_ast_node_for_get_init(n))?,
                cond: expr(c, isl_ast_node_for_get_cond(n))?,
                inc: expr(c, isl_ast_node_for_get_inc(n))?,
                body: Box::new(node(c, isl_ast_node_for_get_body(n))?),
                parallel: {
                    let id = isl_ast_node_get_annotation(n);
                    let p = !id.is_null() && id_name(id) == "parallel";
                    if !id.is_null() {
                        isl_id_free(id);
                    }
                    p
                },
            })
        }
        2 => {
            let cond = expr(c, isl_ast_node_if_get_cond(n))?;
            let then = node(c, isl_ast_node_if_get_then_node(n))?;
            let els = if c.bool(isl_ast_node_if_has_else_node(n), "has_else")? {
                Some(Box::new(node(c, isl_ast_node_if_get_else_node(n))?))
            } else {
                None
            };
            Ok(Ast::If(cond, Box::new(then), els))
        }
        3 => {
            let l = c.check(isl_ast_node_block_get_children(n), "block children")?;
            let k = isl_ast_node_list_n_ast_node(l);
            let mut out = Vec::new();
            let mut res = Ok(());
            for i in 0..k.max(0) {
                match node(c, isl_ast_node_list_get_at(l, i)) {
                    Ok(a) => out.push(a),
                    Err(e) => {
                        res = Err(e);
                        break;
                    }
                }
            }
            isl_ast_node_list_free(l);
            res?;
            Ok(Ast::Block(out))
        }
        4 => {
            let id = c.check(isl_ast_node_mark_get_id(n), "mark id")?;
            let name = id_name(id);
            isl_id_free(id);
            Ok(Ast::Mark(
                name,
                Box::new(node(c, isl_ast_node_mark_get_node(n))?),
            ))
        }
        5 => Ok(Ast::User(expr(c, isl_ast_node_user_get_expr(n))?)),
        _ => Err(c.error("ast node type")),
    }
}

/// # Safety
/// `id` is valid (kept).
unsafe fn id_name(id: *mut isl_id) -> String {
    let p = isl_id_get_name(id);
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// # Safety
/// `e` is a valid expression (kept).
unsafe fn convert_expr(c: &Ctx, e: *mut isl_ast_expr) -> IslResult<AstExpr> {
    match isl_ast_expr_get_type(e) {
        0 => {
            let op = match isl_ast_expr_get_op_type(e) {
                0 | 1 => AstOp::And,
                2 | 3 => AstOp::Or,
                4 => AstOp::Max,
                5 => AstOp::Min,
                6 => AstOp::Minus,
                7 => AstOp::Add,
                8 => AstOp::Sub,
                9 => AstOp::Mul,
                10 => AstOp::Div,
                11 => AstOp::FdivQ,
                12 => AstOp::PdivQ,
                13 => AstOp::PdivR,
                14 => AstOp::ZdivR,
                15 | 16 => AstOp::Cond,
                17 => AstOp::Eq,
                18 => AstOp::Le,
                19 => AstOp::Lt,
                20 => AstOp::Ge,
                21 => AstOp::Gt,
                22 => AstOp::Call,
                t => {
                    return Err(IslError {
                        msg: format!("unsupported AST operator {t}"),
                        quota: false,
                    })
                }
            };
            let n = isl_ast_expr_get_op_n_arg(e);
            let mut args = Vec::new();
            for i in 0..n.max(0) {
                let a = c.check(isl_ast_expr_get_op_arg(e, i), "op arg")?;
                let r = convert_expr(c, a);
                isl_ast_expr_free(a);
                args.push(r?);
            }
            Ok(AstExpr::Op(op, args))
        }
        1 => {
            let id = c.check(isl_ast_expr_get_id(e), "expr id")?;
            let s = id_name(id);
            isl_id_free(id);
            Ok(AstExpr::Id(s))
        }
        2 => {
            let v = c.check(isl_ast_expr_get_val(e), "expr val")?;
            let x = isl_val_get_num_si(v);
            isl_val_free(v);
            Ok(AstExpr::Int(x))
        }
        _ => Err(c.error("ast expr type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The input on which isl's own dataflow (`compute_flow_raw`) dies with SIGSEGV in
    /// `align_context_divs`: a loop `for (i3 = n - 1; i3 > 0; i3 -= 2)` writing `B` at two
    /// strided subscripts (program 2853 of an earlier opt random tester).
    const SINK: &str = "[L, n, M, N] -> { S2[i3] -> B[2i3, i3, i3] : (1 + n + i3) mod 2 = 0 and M >= 0 and N >= 0 and 0 < i3 < n and 2i3 >= n; S1[i1] -> B[i1, i1, i1] : M >= 0 and N >= 0 and 0 <= i1 < L; S0[] -> acc[] : M >= 0 and N >= 0; S4[] -> A[0] : M >= 0 and N > 0; S3[i3] -> B[-1 + M - i3, i3, -1 + N - i3] : (1 + n + i3) mod 2 = 0 and M >= 0 and N >= 0 and 0 < i3 < n }";
    const MUST: &str = "[L, n, M, N] -> { S2[i3] -> B[2i3, i3, i3] : (1 + n + i3) mod 2 = 0 and M >= 0 and N >= 0 and 0 < i3 < n and 2i3 >= n; S1[i1] -> B[i1, i1, i1] : M >= 0 and N >= 0 and 0 <= i1 < L; S0[] -> acc[] : M >= 0 and N >= 0; S4[] -> A[0] : M >= 0 and N > 0; S3[i3] -> B[-1 + M - i3, i3, -1 + N - i3] : (1 + n + i3) mod 2 = 0 and M >= 0 and N >= 0 and 0 < i3 < n }";
    const MAY: &str = "[L, n, M, N] -> { S3[i3] -> B[-1 + M - i3, i3, -1 + N - i3] : (1 + n + i3) mod 2 = 0 and M >= 0 and N >= 0 and 0 < i3 < n; S2[i3] -> B[2i3, i3, i3] : (1 + n + i3) mod 2 = 0 and M >= 0 and N >= 0 and 0 < i3 < n and 2i3 >= n; S2[i3] -> B[i3, i3, i3] : (1 + n + i3) mod 2 = 0 and M >= 0 and N >= 0 and 0 < i3 < n and 2i3 >= n; S3[i3] -> A[1 + i3] : (1 + n + i3) mod 2 = 0 and M >= 0 and N >= 0 and 0 < i3 < n; S4[] -> A[0] : M >= 0 and N > 0; S4[] -> acc[] : M >= 0 and N > 0 }";
    const SCHED: &str = "[L, n, M, N] -> { S2[i3] -> [2, -i3, 0, 0, 0] : (1 + n + i3) mod 2 = 0 and M >= 0 and N >= 0 and 0 < i3 < n and 2i3 >= n; S4[] -> [3, 0, 0, 0, 0] : M >= 0 and N > 0; S3[i3] -> [2, -i3, 1, 0, 0] : (1 + n + i3) mod 2 = 0 and M >= 0 and N >= 0 and 0 < i3 < n; S0[] -> [0, 0, 0, 0, 0] : M >= 0 and N >= 0; S1[i1] -> [1, i1, 0, 0, 0] : M >= 0 and N >= 0 and 0 <= i1 < L }";

    #[test]
    fn strided_domains_flow() {
        let ctx = Ctx::new(20_000_000).unwrap();
        let m = |s: &str| ctx.union_map(s).unwrap();
        let (must, may) = compute_flow(m(SINK), m(MUST), m(MAY), m(SCHED)).unwrap();
        // The write of S2 at B[2i3, i3, i3] reaches the write of S3 where the subscripts
        // meet, and nothing of S0 or S4 (scalars and A) flows into B.
        let expect = m(
            "[L, n, M, N] -> { S2[i3] -> S3[i3'] : 3N = 1 + 2M and 3i3 = -1 + M \
            and 3i3' = -1 + M and (2 + 3n + M) mod 6 = 0 and 4 <= M <= -2 + 3n and 2M >= 2 + 3n; \
            S1[i1] -> S3[i3] : N = M and 2i1 = -1 + M and 2i3 = -1 + M \
            and (1 + 2n + M) mod 4 = 0 and 3 <= M <= n and M < 2n and M < 2L }",
        );
        assert!(
            must.clone().is_subset(&expect).unwrap() && expect.is_subset(&must).unwrap(),
            "{must}"
        );
        assert!(must.is_subset(&may).unwrap());
    }

    /// Lifting changes nothing where isl's own analysis works: strided and unit-step loops,
    /// a triangular nest and a reduction, compared relation for relation.
    #[test]
    fn lifted_flow_equals_isl_flow() {
        let ctx = Ctx::new(20_000_000).unwrap();
        let m = |s: &str| ctx.union_map(s).unwrap();
        let dom = "0 <= i < n and (exists e: i = 1 + 3e) and 0 <= j <= i";
        let w = format!(
            "[n] -> {{ S[i, j] -> A[i + j] : {dom}; T[i] -> A[2i] : 0 <= i < n; \
             U[k] -> s[] : 0 <= k < n and (exists f: k = 2f) }}"
        );
        let r = format!(
            "[n] -> {{ S[i, j] -> A[i - j] : {dom}; T[i] -> A[i + 1] : 0 <= i < n; \
             U[k] -> A[k] : 0 <= k < n and (exists f: k = 2f); U[k] -> s[] : 0 <= k < n and (exists f: k = 2f) }}"
        );
        let sched = format!(
            "[n] -> {{ S[i, j] -> [0, i, j] : {dom}; T[i] -> [1, -i, 0] : 0 <= i < n; \
             U[k] -> [2, k, 0] : 0 <= k < n and (exists f: k = 2f) }}"
        );
        for (sink, must, may) in [(&r, &w, &w), (&w, &w, &r)] {
            let (a, b) = compute_flow(
                m(sink),
                m(must),
                m(if may == must { "[n] -> { }" } else { may }),
                m(&sched),
            )
            .unwrap();
            let (c, d) = compute_flow_raw(
                m(sink),
                m(must),
                m(if may == must { "[n] -> { }" } else { may }),
                m(&sched),
            )
            .unwrap();
            assert!(!c.clone().is_empty().unwrap());
            for (x, y) in [(a, c), (b, d)] {
                assert!(
                    x.clone().is_subset(&y).unwrap() && y.is_subset(&x).unwrap(),
                    "{x} vs {y}"
                );
            }
        }
    }
}
