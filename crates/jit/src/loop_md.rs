//! Loop metadata on back edges (`!llvm.loop`), which inkwell cannot build: a loop ID is a
//! distinct node whose first operand is itself. This is the crate's only direct use of the
//! LLVM C API for IR; ownership: every node belongs to the LLVM context, nothing is freed
//! here (the temporary node is replaced by, and dies into, the loop ID).

use inkwell::context::{AsContextRef, Context};
use inkwell::values::{AsValueRef, InstructionValue};
use llvm_sys::core::{
    LLVMConstInt, LLVMGetMDKindIDInContext, LLVMInt1TypeInContext, LLVMMDNodeInContext2,
    LLVMMDStringInContext2, LLVMMetadataAsValue, LLVMSetMetadata, LLVMValueAsMetadata,
};
use llvm_sys::debuginfo::{LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode};

/// Marks the loop whose back edge is `latch` (a branch to the loop header) with
/// `llvm.loop.vectorize.enable = false`: LLVM's loop vectorizer leaves it alone (the SLP
/// vectorizer still packs its body).
pub(crate) fn disable_vectorize(cx: &Context, latch: InstructionValue<'_>) {
    let key = "llvm.loop.vectorize.enable";
    let kind = "llvm.loop";
    // SAFETY: every pointer passed is valid for the call: the context is alive (borrowed),
    // the strings are passed with their lengths, the operand arrays outlive the calls that
    // read them, and `latch` is an instruction of a function in this context. The temporary
    // node is replaced (RAUW) by the loop ID, which LLVM then makes distinct because it
    // refers to itself; LLVM owns all of them.
    unsafe {
        let c = cx.as_ctx_ref();
        let name = LLVMMDStringInContext2(c, key.as_ptr().cast(), key.len());
        let off = LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(c), 0, 0));
        let mut hint = [name, off];
        let hint = LLVMMDNodeInContext2(c, hint.as_mut_ptr(), hint.len());
        let tmp = LLVMTemporaryMDNode(c, std::ptr::null_mut(), 0);
        let mut ops = [tmp, hint];
        let id = LLVMMDNodeInContext2(c, ops.as_mut_ptr(), ops.len());
        LLVMMetadataReplaceAllUsesWith(tmp, id);
        let k = LLVMGetMDKindIDInContext(c, kind.as_ptr().cast(), kind.len() as u32);
        LLVMSetMetadata(latch.as_value_ref(), k, LLVMMetadataAsValue(c, id));
    }
}
