//! Loop features of optimised LLVM IR for the machine-level cost model: what an instruction
//! count cannot see.
//!
//! - **Strided memory accesses.** A load or store inside a loop whose address moves by more
//!   than its own width per iteration (a column walk, a transposing copy), or by an amount
//!   that is not an affine function of the loop's induction variables (an indirect or a
//!   conditionally updated index), touches a new cache line on every iteration.
//! - **Loop-carried recurrences.** When one iteration needs the result of the previous one
//!   (an accumulator, a dependent multiply chain, Gauss-Seidel's in-place update), the loop
//!   runs at the latency of that chain, not at the throughput of its instructions. For each
//!   loop the critical recurrence is found: a cycle through a phi of the loop header (an SSA
//!   value carried by the back edge), or through memory (a store that the next iteration
//!   loads from, found by comparing affine addresses). Its instructions are counted per class
//!   (integer, floating point, division/square root/library math, memory), once per
//!   execution of the loop header.
//!
//! Loops are the natural loops of the control-flow graph: a back edge is an edge to a block on
//! the stack of a depth-first search from the entry (in a reducible graph, to a dominator),
//! and its loop is the header with every block that reaches the latch without passing through
//! the header. (These are model features only: a feature missed is a worse estimate, never a
//! wrong run.)
//! Addresses are decomposed as base + Σ coefficient·term + constant over induction variables
//! (header phis stepped by a constant) and values defined outside the loop, treating sign and
//! zero extension as exact.

use std::collections::HashMap;

use inkwell::basic_block::BasicBlock;
use inkwell::targets::TargetData;
use inkwell::types::{AnyType, BasicTypeEnum};
use inkwell::values::{
    AsValueRef, BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode as Op,
    InstructionValue, Operand, PhiValue,
};

/// Extra features per block, indexed like [`Features::strided`].
pub(crate) struct Features {
    /// Strided or irregular memory accesses of each block (per execution of the block).
    pub strided: Vec<u32>,
    /// Instructions on the critical recurrence of the loop each block heads: integer,
    /// floating point, integer division, floating-point math (division, square root, library
    /// calls), memory.
    pub chain: Vec<[u32; 5]>,
    /// The header of the innermost loop each block is in.
    pub inner: Vec<Option<usize>>,
    /// Conditional branches of each block, in a loop, whose condition depends on a value
    /// loaded in that loop (data-dependent branches, the ones a predictor may miss).
    pub data_branches: Vec<u32>,
}

/// Chain classes, indices of [`Features::chain`].
const C_INT: usize = 0;
const C_FLOAT: usize = 1;
const C_IDIV: usize = 2;
const C_FMATH: usize = 3;
const C_MEM: usize = 4;

/// Upper bound on the instructions visited per recurrence search, and per function: the
/// analysis must stay cheap on huge generated functions.
const VISIT_LIMIT: usize = 20_000;
const FUNCTION_LIMIT: usize = 400_000;

/// Bytes of a cache line.
const LINE: u64 = 64;

type Id = usize;

fn id<V: AsValueRef>(v: &V) -> Id {
    v.as_value_ref() as usize
}

/// A natural loop: its header, and its blocks (`Func::members[id]`, `size` of them).
#[derive(Clone, Copy, Debug)]
struct Loop {
    head: usize,
    id: usize,
    size: usize,
}

/// base + Σ coef·term + k, in bytes for pointers; `terms` sorted by id.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Aff {
    base: Option<Id>,
    k: i64,
    terms: Vec<(Id, i64)>,
}

impl Aff {
    fn konst(k: i64) -> Aff {
        Aff {
            base: None,
            k,
            terms: Vec::new(),
        }
    }
    fn term(t: Id) -> Aff {
        Aff {
            base: None,
            k: 0,
            terms: vec![(t, 1)],
        }
    }
    fn scale(mut self, c: i64) -> Option<Aff> {
        if self.base.is_some() {
            return None;
        }
        self.k = self.k.checked_mul(c)?;
        for t in &mut self.terms {
            t.1 = t.1.checked_mul(c)?;
        }
        self.terms.retain(|t| t.1 != 0);
        Some(self)
    }
    fn add(self, o: Aff) -> Option<Aff> {
        let base = match (self.base, o.base) {
            (Some(_), Some(_)) => return None,
            (a, b) => a.or(b),
        };
        let mut terms = self.terms;
        for (t, c) in o.terms {
            match terms.iter_mut().find(|x| x.0 == t) {
                Some(x) => x.1 = x.1.checked_add(c)?,
                None => terms.push((t, c)),
            }
        }
        terms.retain(|t| t.1 != 0);
        terms.sort_unstable();
        Some(Aff {
            base,
            k: self.k.checked_add(o.k)?,
            terms,
        })
    }
}

/// An address expression without its constant: base and terms.
type Key = (Option<Id>, Vec<(Id, i64)>);

/// A load or store in a loop.
struct Access {
    block: usize,
    /// The header of its innermost loop.
    head: usize,
    /// Bytes its address moves per iteration, if affine.
    delta: Option<i64>,
    /// Bytes it accesses (0 if unknown).
    width: u64,
    /// Its address less the constant, if affine.
    key: Option<Key>,
}

/// Nominal latency in cycles, only to choose the critical recurrence among several.
fn latency(i: &InstructionValue<'_>) -> (i64, Option<usize>) {
    match i.get_opcode() {
        Op::Phi | Op::BitCast | Op::Freeze => (0, None),
        Op::Mul => (3, Some(C_INT)),
        Op::UDiv | Op::SDiv | Op::URem | Op::SRem => (14, Some(C_IDIV)),
        Op::FDiv | Op::FRem => (13, Some(C_FMATH)),
        Op::FAdd
        | Op::FSub
        | Op::FMul
        | Op::FNeg
        | Op::FCmp
        | Op::FPExt
        | Op::FPTrunc
        | Op::SIToFP
        | Op::UIToFP
        | Op::FPToSI
        | Op::FPToUI => (3, Some(C_FLOAT)),
        Op::Load => (5, Some(C_MEM)),
        Op::Call => {
            let n = i.get_num_operands();
            let name = match n.checked_sub(1).and_then(|k| i.get_operand(k)) {
                Some(Operand::Value(v)) if v.is_pointer_value() => v
                    .into_pointer_value()
                    .get_name()
                    .to_string_lossy()
                    .into_owned(),
                _ => String::new(),
            };
            if name.starts_with("llvm.fmuladd") || name.starts_with("llvm.fma") {
                (4, Some(C_FLOAT))
            } else if name.starts_with("llvm.lifetime") || name.starts_with("llvm.assume") {
                (0, None)
            } else if name.starts_with("llvm.smax")
                || name.starts_with("llvm.smin")
                || name.starts_with("llvm.umax")
                || name.starts_with("llvm.umin")
                || name.starts_with("llvm.abs")
            {
                (1, Some(C_INT))
            } else {
                (20, Some(C_FMATH))
            }
        }
        _ => (1, Some(C_INT)),
    }
}

struct Func<'a, 'ctx> {
    index: HashMap<BasicBlock<'ctx>, usize>,
    loops: Vec<Loop>,
    members: Vec<Vec<bool>>,
    td: &'a TargetData,
    visited: usize,
}

/// The loop features of every block of `f` (in `get_basic_block_iter` order).
pub(crate) fn analyse<'ctx>(f: &FunctionValue<'ctx>, td: &TargetData) -> Features {
    let blocks: Vec<BasicBlock<'ctx>> = f.get_basic_block_iter().collect();
    let n = blocks.len();
    let mut out = Features {
        strided: vec![0; n],
        chain: vec![[0; 5]; n],
        inner: vec![None; n],
        data_branches: vec![0; n],
    };
    let index: HashMap<_, _> = blocks.iter().enumerate().map(|(k, b)| (*b, k)).collect();
    // Back edges: edges to a block on the stack of a depth-first search from the entry;
    // each gives the natural loop of its header (the header and every block that reaches
    // the latch without passing through the header), merged per header.
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut pred: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, b) in blocks.iter().enumerate() {
        let Some(t) = b.get_terminator() else {
            continue;
        };
        for j in 0..t.get_num_operands() {
            if let Some(Operand::Block(s)) = t.get_operand(j) {
                if let Some(&h) = index.get(&s) {
                    succ[k].push(h);
                    pred[h].push(k);
                }
            }
        }
    }
    let mut state = vec![0u8; n];
    let mut back: Vec<(usize, usize)> = Vec::new();
    if n > 0 {
        let mut stack = vec![(0usize, 0usize)];
        state[0] = 1;
        while let Some(top) = stack.last_mut() {
            let (v, i) = *top;
            if i < succ[v].len() {
                top.1 += 1;
                let w = succ[v][i];
                match state[w] {
                    0 => {
                        state[w] = 1;
                        stack.push((w, 0));
                    }
                    1 => back.push((v, w)),
                    _ => {}
                }
            } else {
                state[v] = 2;
                stack.pop();
            }
        }
    }
    let mut members: Vec<Vec<bool>> = Vec::new();
    let mut loops: Vec<Loop> = Vec::new();
    for (latch, head) in back {
        let id = match loops.iter().find(|l| l.head == head) {
            Some(l) => l.id,
            None => {
                members.push(vec![false; n]);
                loops.push(Loop {
                    head,
                    id: members.len() - 1,
                    size: 0,
                });
                members.len() - 1
            }
        };
        let m = &mut members[id];
        m[head] = true;
        let mut work = vec![latch];
        while let Some(x) = work.pop() {
            if !m[x] {
                m[x] = true;
                work.extend(pred[x].iter().copied());
            }
        }
    }
    for l in &mut loops {
        l.size = members[l.id].iter().filter(|&&x| x).count();
    }
    loops.sort_by_key(|l| l.head);
    if loops.is_empty() {
        return out;
    }
    let mut fx = Func {
        index,
        loops,
        members,
        td,
        visited: 0,
    };
    let inner: Vec<Option<Loop>> = (0..n).map(|b| fx.innermost(b)).collect();
    out.inner = inner.iter().map(|l| l.map(|l| l.head)).collect();
    let mut inductions: HashMap<usize, HashMap<Id, i64>> = HashMap::new();
    // Memory accesses per innermost loop (by head): (load?, address, value stored / loaded).
    let mut accesses: HashMap<usize, Vec<(bool, Option<Aff>, InstructionValue<'ctx>)>> =
        HashMap::new();
    let mut pending: Vec<Access> = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        let Some(l) = inner[k] else {
            continue;
        };
        let ind = inductions
            .entry(l.head)
            .or_insert_with(|| fx.inductions(&blocks[l.head], l));
        let ind = ind.clone();
        let mut it = b.get_first_instruction();
        while let Some(i) = it {
            it = i.get_next_instruction();
            let (is_load, ptr_op) = match i.get_opcode() {
                Op::Load => (true, 0),
                Op::Store => (false, 1),
                _ => continue,
            };
            let ptr = match i.get_operand(ptr_op) {
                Some(Operand::Value(v)) => v,
                _ => continue,
            };
            let width = if is_load {
                fx.size_of(&i.get_type())
            } else {
                match i.get_operand(0) {
                    Some(Operand::Value(v)) => fx.size_of(&v.get_type()),
                    _ => None,
                }
            };
            let a = fx.aff(ptr, l, &ind, 0);
            let d = a.as_ref().and_then(|a| delta(a, &ind));
            pending.push(Access {
                block: k,
                head: l.head,
                delta: d,
                width: width.unwrap_or(0),
                key: a.as_ref().map(|a| (a.base, a.terms.clone())),
            });
            accesses.entry(l.head).or_default().push((is_load, a, i));
        }
    }
    for (k, b) in blocks.iter().enumerate() {
        let (Some(l), Some(t)) = (inner[k], b.get_terminator()) else {
            continue;
        };
        if t.get_opcode() == Op::Br && t.get_num_operands() == 3 {
            if let Some(Operand::Value(c)) = t.get_operand(0) {
                if let Some(ci) = c.as_instruction_value() {
                    if fx.loads_in(&ci, l) {
                        out.data_branches[k] += 1;
                    }
                }
            }
        }
    }
    // A strided access moves by more than a cache line per iteration, and by more than the
    // accesses of the loop with the same address but for a constant (unrolled or vector
    // copies of one reference) cover together; an address that is not affine is irregular.
    let mut group: HashMap<(usize, Key), u64> = HashMap::new();
    for a in &pending {
        if let Some(key) = &a.key {
            *group.entry((a.head, key.clone())).or_default() += a.width;
        }
    }
    for a in pending {
        let covered = a
            .key
            .as_ref()
            .map(|key| group[&(a.head, key.clone())])
            .unwrap_or(0);
        let strided = match a.delta {
            Some(d) => d.unsigned_abs() > LINE.max(covered),
            None => true,
        };
        if strided {
            out.strided[a.block] += 1;
        }
    }
    // The critical recurrence of each loop.
    let loops = fx.loops.clone();
    for l in loops {
        if fx.visited > FUNCTION_LIMIT {
            break;
        }
        let mut best: Option<(i64, [u32; 5])> = None;
        let mut consider = |c: Option<(i64, [u32; 5])>| {
            if let Some(c) = c {
                if best.is_none_or(|b| c.0 > b.0) {
                    best = Some(c);
                }
            }
        };
        // Through a phi of the header.
        for (i, p) in header_phis(&blocks[l.head]) {
            for j in 0..p.count_incoming() {
                let Some((v, from)) = p.get_incoming(j) else {
                    continue;
                };
                if fx.index.get(&from).is_some_and(|&b| fx.in_loop(l, b)) {
                    if let Some(vi) = v.as_instruction_value() {
                        consider(fx.longest(id(&i), vi, l, [0; 5]));
                    }
                }
            }
        }
        // Through memory: a load that reads what the previous iteration stored.
        if let (Some(acc), Some(ind)) = (accesses.get(&l.head), inductions.get(&l.head)) {
            for (_, la, li) in acc.iter().filter(|a| a.0) {
                let Some(la) = la else { continue };
                let Some(d) = delta(la, ind) else { continue };
                for (_, sa, si) in acc.iter().filter(|a| !a.0) {
                    let Some(sa) = sa else { continue };
                    if sa.base == la.base
                        && sa.terms == la.terms
                        && la.k.checked_add(d) == Some(sa.k)
                    {
                        if let Some(Operand::Value(v)) = si.get_operand(0) {
                            if let Some(vi) = v.as_instruction_value() {
                                let mut start = [0; 5];
                                start[C_MEM] = 1;
                                consider(
                                    fx.longest(id(li), vi, l, start)
                                        .map(|(lat, c)| (lat + 5, c)),
                                );
                            }
                        }
                    }
                }
            }
        }
        if let Some((_, c)) = best {
            out.chain[l.head] = c;
        }
    }
    out
}

/// The phis at the top of a block.
fn header_phis<'ctx>(b: &BasicBlock<'ctx>) -> Vec<(InstructionValue<'ctx>, PhiValue<'ctx>)> {
    let mut out = Vec::new();
    let mut it = b.get_first_instruction();
    while let Some(i) = it {
        if i.get_opcode() != Op::Phi {
            break;
        }
        if let Ok(p) = PhiValue::try_from(i) {
            out.push((i, p));
        }
        it = i.get_next_instruction();
    }
    out
}

/// The per-iteration change of an address, in bytes, if every term is an induction variable
/// or invariant.
fn delta(a: &Aff, ind: &HashMap<Id, i64>) -> Option<i64> {
    let mut d = 0i64;
    for (t, c) in &a.terms {
        if let Some(s) = ind.get(t) {
            d = d.checked_add(c.checked_mul(*s)?)?;
        }
    }
    Some(d)
}

impl<'ctx> Func<'_, 'ctx> {
    fn in_loop(&self, l: Loop, b: usize) -> bool {
        self.members[l.id][b]
    }

    fn innermost(&self, b: usize) -> Option<Loop> {
        self.loops
            .iter()
            .filter(|l| self.in_loop(**l, b))
            .min_by_key(|l| l.size)
            .copied()
    }

    fn block_of(&self, i: &InstructionValue<'_>) -> Option<usize> {
        i.get_parent().and_then(|b| self.index.get(&b).copied())
    }

    fn size_of(&self, t: &dyn AnyType<'_>) -> Option<u64> {
        let s = self.td.get_abi_size(t);
        (s > 0).then_some(s)
    }

    /// Header phis stepped by a constant on every back edge: id -> step (bytes for pointers).
    fn inductions(&mut self, head: &BasicBlock<'_>, l: Loop) -> HashMap<Id, i64> {
        let mut out = HashMap::new();
        for (i, p) in header_phis(head) {
            let mut step: Option<i64> = None;
            let mut ok = true;
            for j in 0..p.count_incoming() {
                let Some((v, from)) = p.get_incoming(j) else {
                    ok = false;
                    break;
                };
                if !self.index.get(&from).is_some_and(|&b| self.in_loop(l, b)) {
                    continue;
                }
                // v must be phi + constant.
                let s = v
                    .as_instruction_value()
                    .and_then(|vi| self.step_of(&vi, id(&i)));
                match (s, step) {
                    (Some(s), None) => step = Some(s),
                    (Some(s), Some(t)) if s == t => {}
                    _ => {
                        ok = false;
                        break;
                    }
                }
            }
            if let (true, Some(s)) = (ok, step) {
                out.insert(id(&i), s);
            }
        }
        out
    }

    /// `c` if `v` is `phi + c` (an add, a sub of a constant, or a constant GEP of the phi).
    fn step_of(&self, v: &InstructionValue<'_>, phi: Id) -> Option<i64> {
        let opnd = |k: u32| match v.get_operand(k) {
            Some(Operand::Value(x)) => Some(x),
            _ => None,
        };
        let konst = |x: BasicValueEnum<'_>| match x {
            BasicValueEnum::IntValue(c) if c.is_const() => c.get_sign_extended_constant(),
            _ => None,
        };
        match v.get_opcode() {
            Op::Add => {
                let (a, b) = (opnd(0)?, opnd(1)?);
                if id(&a) == phi {
                    konst(b)
                } else if id(&b) == phi {
                    konst(a)
                } else {
                    None
                }
            }
            Op::Sub => (id(&opnd(0)?) == phi)
                .then(|| konst(opnd(1)?))
                .flatten()
                .and_then(|c| c.checked_neg()),
            Op::GetElementPtr => {
                if v.get_num_operands() != 2 || id(&opnd(0)?) != phi {
                    return None;
                }
                let ty: BasicTypeEnum<'_> = v.get_gep_source_element_type().ok()?;
                let size = self.size_of(&ty)? as i64;
                konst(opnd(1)?)?.checked_mul(size)
            }
            _ => None,
        }
    }

    /// `v` as an affine form over the inductions of `l` and values defined outside it.
    fn aff(
        &self,
        v: BasicValueEnum<'_>,
        l: Loop,
        ind: &HashMap<Id, i64>,
        depth: u32,
    ) -> Option<Aff> {
        if depth > 24 {
            return None;
        }
        if let BasicValueEnum::IntValue(c) = v {
            if c.is_const() {
                return c.get_sign_extended_constant().map(Aff::konst);
            }
        }
        let opaque = |v: &BasicValueEnum<'_>| {
            if v.is_pointer_value() {
                Aff {
                    base: Some(id(v)),
                    k: 0,
                    terms: Vec::new(),
                }
            } else {
                Aff::term(id(v))
            }
        };
        let Some(i) = v.as_instruction_value() else {
            return Some(opaque(&v));
        };
        if !self.block_of(&i).is_some_and(|b| self.in_loop(l, b)) {
            return Some(opaque(&v));
        }
        if ind.contains_key(&id(&i)) {
            return Some(Aff::term(id(&i)));
        }
        let opnd = |k: u32| match i.get_operand(k) {
            Some(Operand::Value(x)) => Some(x),
            _ => None,
        };
        let rec = |x: BasicValueEnum<'_>| self.aff(x, l, ind, depth + 1);
        let konst = |x: BasicValueEnum<'_>| match x {
            BasicValueEnum::IntValue(c) if c.is_const() => c.get_sign_extended_constant(),
            _ => None,
        };
        match i.get_opcode() {
            Op::Add => rec(opnd(0)?)?.add(rec(opnd(1)?)?),
            // SAFETY: `i` is a valid `or` instruction of a live module.
            Op::Or if unsafe { llvm_sys::core::LLVMGetIsDisjoint(i.as_value_ref()) } != 0 => {
                rec(opnd(0)?)?.add(rec(opnd(1)?)?)
            }
            Op::Sub => rec(opnd(0)?)?.add(rec(opnd(1)?)?.scale(-1)?),
            Op::Mul => {
                let (a, b) = (opnd(0)?, opnd(1)?);
                match (konst(a), konst(b)) {
                    (_, Some(c)) => rec(a)?.scale(c),
                    (Some(c), _) => rec(b)?.scale(c),
                    _ => None,
                }
            }
            Op::Shl => {
                let c = konst(opnd(1)?)?;
                if !(0..32).contains(&c) {
                    return None;
                }
                rec(opnd(0)?)?.scale(1 << c)
            }
            Op::SExt | Op::ZExt | Op::Trunc | Op::Freeze => rec(opnd(0)?),
            Op::GetElementPtr => {
                let mut acc = rec(opnd(0)?)?;
                let mut ty: BasicTypeEnum<'_> = i.get_gep_source_element_type().ok()?;
                for k in 1..i.get_num_operands() {
                    if k > 1 {
                        ty = match ty {
                            BasicTypeEnum::ArrayType(a) => a.get_element_type(),
                            BasicTypeEnum::VectorType(v) => v.get_element_type(),
                            _ => return None,
                        };
                    }
                    let size = self.size_of(&ty)? as i64;
                    acc = acc.add(rec(opnd(k)?)?.scale(size)?)?;
                }
                Some(acc)
            }
            _ => None,
        }
    }

    /// The longest-latency dependence path from `src` (a header phi or a load) to `v` inside
    /// `l`, and the classes of its instructions (plus `start`).
    fn longest(
        &mut self,
        src: Id,
        v: InstructionValue<'ctx>,
        l: Loop,
        start: [u32; 5],
    ) -> Option<(i64, [u32; 5])> {
        // Iterative post-order DFS with memo: dist = None (does not reach src) or the latency
        // of the longest path and the operand it comes through.
        let mut memo: HashMap<Id, Option<(i64, Option<InstructionValue<'ctx>>)>> = HashMap::new();
        memo.insert(src, Some((0, None)));
        let mut stack: Vec<(InstructionValue<'ctx>, bool)> = vec![(v, false)];
        let mut visits = 0usize;
        while let Some((x, expanded)) = stack.pop() {
            if memo.contains_key(&id(&x)) && !expanded {
                continue;
            }
            let ops = self.operands(&x, l);
            if !expanded {
                visits += 1;
                if visits > VISIT_LIMIT {
                    self.visited += visits;
                    return None;
                }
                stack.push((x, true));
                for o in &ops {
                    if !memo.contains_key(&id(o)) {
                        stack.push((*o, false));
                    }
                }
                continue;
            }
            let mut best: Option<(i64, Option<InstructionValue<'ctx>>)> = None;
            for o in &ops {
                if let Some(Some((d, _))) = memo.get(&id(o)) {
                    if best.is_none_or(|b| *d > b.0) {
                        best = Some((*d, Some(*o)));
                    }
                }
            }
            let (lat, _) = latency(&x);
            memo.insert(id(&x), best.map(|(d, p)| (d + lat, p)));
        }
        self.visited += visits;
        let (total, _) = memo.get(&id(&v)).copied().flatten()?;
        // Walk the path back, counting classes.
        let mut classes = start;
        let mut at = Some(v);
        let mut steps = 0;
        while let Some(x) = at {
            if id(&x) == src || steps > VISIT_LIMIT {
                break;
            }
            steps += 1;
            if let (_, Some(c)) = latency(&x) {
                classes[c] += 1;
            }
            at = memo.get(&id(&x)).copied().flatten().and_then(|(_, p)| p);
        }
        Some((total, classes))
    }

    /// Whether `x` depends, within a few steps inside `l`, on a load (not through the
    /// back edges of phis).
    fn loads_in(&self, x: &InstructionValue<'ctx>, l: Loop) -> bool {
        let mut stack = vec![(*x, 0u32)];
        let mut seen = std::collections::HashSet::new();
        while let Some((y, d)) = stack.pop() {
            if y.get_opcode() == Op::Load {
                return true;
            }
            if d >= 8 || !seen.insert(id(&y)) {
                continue;
            }
            stack.extend(self.operands(&y, l).into_iter().map(|o| (o, d + 1)));
        }
        false
    }

    /// The instruction operands of `x` that lie in `l`, leaving out the back-edge values of
    /// phis (those are carried from the previous iteration: an edge into a loop header from
    /// a block of its loop).
    fn operands(&self, x: &InstructionValue<'ctx>, l: Loop) -> Vec<InstructionValue<'ctx>> {
        let mut out = Vec::new();
        let in_loop =
            |i: &InstructionValue<'ctx>| self.block_of(i).is_some_and(|b| self.in_loop(l, b));
        if x.get_opcode() == Op::Phi {
            let Ok(p) = PhiValue::try_from(*x) else {
                return out;
            };
            let me = self.block_of(x);
            for j in 0..p.count_incoming() {
                if let Some((v, from)) = p.get_incoming(j) {
                    let back = match (self.index.get(&from), me) {
                        (Some(&f), Some(m)) => self
                            .loops
                            .iter()
                            .any(|h| h.head == m && self.in_loop(*h, f)),
                        _ => true,
                    };
                    if back {
                        continue;
                    }
                    if let Some(vi) = v.as_instruction_value() {
                        if in_loop(&vi) {
                            out.push(vi);
                        }
                    }
                }
            }
            return out;
        }
        for k in 0..x.get_num_operands() {
            if let Some(Operand::Value(v)) = x.get_operand(k) {
                if let Some(vi) = v.as_instruction_value() {
                    if in_loop(&vi) {
                        out.push(vi);
                    }
                }
            }
        }
        out
    }
}
