//! SQL text → a typed plan: the table, the filter, the projection or aggregation, the sort
//! and the limit. Expressions are type-checked here and rendered as kernel-language (C)
//! expressions over the pipeline's row index `i`.
//!
//! The subset: `SELECT items FROM table [WHERE cond] [GROUP BY keys] [ORDER BY keys]
//! [LIMIT n [OFFSET m]]`; items are `*`, expressions over columns with `+ - * / // %`,
//! comparisons, `AND OR NOT`, `CAST(.. AS DOUBLE|FLOAT|INTEGER|BIGINT)`, the functions
//! `abs sqrt exp ln floor ceil power least greatest`, user functions written in the kernel
//! language, and the aggregates `sum count min max avg` (with GROUP BY: group keys and
//! aggregates only). `/` divides as floating point (as DuckDB does), `//` and `%` are integer
//! division and remainder (C's, truncating; division by zero is a run-time error).

use std::collections::{BTreeSet, HashMap};

use sqlparser::ast::{
    self, BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr,
    LimitClause, OrderByKind, SelectItem, SetExpr, Spanned, Statement, TableFactor, UnaryOperator,
    Value,
};

use crate::error::{Pos, QueryError, Result};
use crate::table::{Table, Ty};

/// A typed expression, rendered as kernel-language text over row `i`.
#[derive(Clone, Debug)]
pub struct TExpr {
    /// C text, short-circuit `&&`/`||`.
    pub c: String,
    /// C text with `&`/`|` for AND/OR (evaluates both sides: only used when `!can_fail`).
    pub cb: String,
    /// Its type.
    pub ty: Ty,
    /// Whether evaluating it can fail (integer division, a user function).
    pub can_fail: bool,
    /// Table columns it reads.
    pub cols: BTreeSet<usize>,
    /// The SQL text, for names and messages.
    pub sql: String,
    /// A text column, as is (only selected or grouped by).
    pub str_col: Option<usize>,
}

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFn {
    /// `sum(x)`
    Sum,
    /// `count(*)`, `count(x)` (no NULLs, so the same)
    Count,
    /// `min(x)`
    Min,
    /// `max(x)`
    Max,
    /// `avg(x)`
    Avg,
}

/// One aggregate of a query.
#[derive(Clone, Debug)]
pub struct Agg {
    /// Which.
    pub f: AggFn,
    /// Its argument (`None` for `count(*)`).
    pub arg: Option<TExpr>,
}

impl Agg {
    /// The type of the aggregate's value.
    pub fn ty(&self) -> Ty {
        match (self.f, &self.arg) {
            (AggFn::Count, _) => Ty::I64,
            (AggFn::Avg, _) => Ty::F64,
            (_, Some(a)) if a.ty.is_float() => Ty::F64,
            _ => Ty::I64,
        }
    }
}

/// A select item of a grouped query.
#[derive(Clone, Copy, Debug)]
pub enum GroupItem {
    /// The `k`-th group key.
    Key(usize),
    /// The `a`-th aggregate.
    Agg(usize),
}

/// What the pipeline computes per row.
#[derive(Clone, Debug)]
pub enum Body {
    /// One output value per selected row: the select items, then hidden sort keys.
    Project(Vec<TExpr>),
    /// Groups (no keys: one group) and their aggregates.
    Aggregate {
        /// The group keys (integer expressions or text columns).
        keys: Vec<TExpr>,
        /// The aggregates.
        aggs: Vec<Agg>,
        /// The select items.
        items: Vec<GroupItem>,
    },
}

/// A checked query.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The table's name as written.
    pub table: String,
    /// `WHERE`.
    pub filter: Option<TExpr>,
    /// The projection or aggregation.
    pub body: Body,
    /// Output column names (the visible ones first; `Project` may add hidden sort keys).
    pub names: Vec<String>,
    /// How many outputs are visible.
    pub visible: usize,
    /// `ORDER BY`: output index and descending.
    pub order: Vec<(usize, bool)>,
    /// `LIMIT`.
    pub limit: Option<u64>,
    /// `OFFSET`.
    pub offset: u64,
}

/// A user function's signature (scalar parameters and result).
#[derive(Clone, Debug)]
pub struct UserFn {
    /// Parameter types.
    pub params: Vec<Ty>,
    /// Result type.
    pub ret: Ty,
}

/// Built-in scalar functions.
pub const BUILTINS: &str =
    "abs, sqrt, exp, ln, floor, ceil, power, least, greatest; aggregates sum, count, min, max, avg";

fn pos_of(node: &impl Spanned) -> Pos {
    span_pos(node.span())
}

fn span_pos(s: sqlparser::tokenizer::Span) -> Pos {
    Pos {
        line: s.start.line,
        col: s.start.column,
    }
}

/// Parses `sql` (DuckDB dialect) into its one `SELECT` statement.
pub fn parse(sql: &str) -> Result<ast::Query> {
    let dialect = sqlparser::dialect::DuckDbDialect {};
    let stmts = sqlparser::parser::Parser::parse_sql(&dialect, sql)
        .map_err(|e| QueryError::Syntax(e.to_string()))?;
    let mut it = stmts.into_iter();
    match (it.next(), it.next()) {
        (Some(Statement::Query(q)), None) => Ok(*q),
        (Some(s), None) => Err(QueryError::Unsupported {
            pos: Pos::default(),
            what: "only SELECT queries are supported".into(),
            text: s.to_string(),
        }),
        (None, _) => Err(QueryError::Syntax("an empty query".into())),
        (Some(_), Some(s)) => Err(QueryError::Unsupported {
            pos: Pos::default(),
            what: "one statement per query".into(),
            text: s.to_string(),
        }),
    }
}

/// The table a query reads: its `FROM` name as written, and where it is.
pub fn table_name(q: &ast::Query) -> Result<(String, Pos)> {
    let sel = select_of(q)?;
    match sel.from.as_slice() {
        [t] if t.joins.is_empty() => match &t.relation {
            TableFactor::Table { name, .. } => {
                let parts: Vec<String> = name
                    .0
                    .iter()
                    .map(|p| match p.as_ident() {
                        Some(i) => i.value.clone(),
                        None => p.to_string(),
                    })
                    .collect();
                Ok((parts.join("."), pos_of(name)))
            }
            other => Err(unsupported(
                other,
                "FROM takes one table name or quoted file path",
            )),
        },
        [] => Err(QueryError::Unsupported {
            pos: span_pos(sel.select_token.0.span),
            what: "a query without FROM".into(),
            text: sel.to_string(),
        }),
        _ => Err(QueryError::Unsupported {
            pos: Pos::default(),
            what: "joins and several tables (one table per query)".into(),
            text: sel
                .from
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

fn unsupported(node: &(impl Spanned + std::fmt::Display), what: &str) -> QueryError {
    QueryError::Unsupported {
        pos: pos_of(node),
        what: what.to_string(),
        text: node.to_string(),
    }
}

fn select_of(q: &ast::Query) -> Result<&ast::Select> {
    match q.body.as_ref() {
        SetExpr::Select(s) => Ok(s),
        other => Err(unsupported(
            other,
            "only a plain SELECT (no UNION, VALUES, subqueries)",
        )),
    }
}

/// Type-checks query `q` over `table` with the user functions `udfs`.
pub fn plan(q: &ast::Query, table: &Table, udfs: &HashMap<String, UserFn>) -> Result<Plan> {
    if q.with.is_some() {
        return Err(QueryError::Unsupported {
            pos: Pos::default(),
            what: "WITH".into(),
            text: q.to_string(),
        });
    }
    let sel = select_of(q)?;
    if sel.distinct.is_some() || sel.having.is_some() || sel.top.is_some() {
        return Err(QueryError::Unsupported {
            pos: span_pos(sel.select_token.0.span),
            what: "DISTINCT, HAVING and TOP".into(),
            text: sel.to_string(),
        });
    }
    let cx = Cx {
        table,
        udfs,
        table_name: table_name(q)?.0,
    };
    let filter = match &sel.selection {
        Some(e) => {
            let t = cx.expr(e)?;
            if t.ty != Ty::Bool {
                return Err(QueryError::Type {
                    pos: pos_of(e),
                    text: e.to_string(),
                    msg: format!("WHERE needs a BOOLEAN condition, not {}", t.ty.sql()),
                });
            }
            Some(t)
        }
        None => None,
    };
    // Select items: (expression, name); `*` expands to every column.
    let mut items: Vec<(Option<&Expr>, String, Option<usize>)> = Vec::new();
    for it in &sel.projection {
        match it {
            SelectItem::UnnamedExpr(e) => items.push((Some(e), expr_name(e), None)),
            SelectItem::ExprWithAlias { expr, alias } => {
                items.push((Some(expr), alias.value.clone(), None))
            }
            SelectItem::Wildcard(_) => {
                for (c, f) in table.schema.fields().iter().enumerate() {
                    items.push((None, f.name().clone(), Some(c)));
                }
            }
            other => return Err(unsupported(other, "select items are expressions or `*`")),
        }
    }
    if sel.projection.is_empty() {
        // DuckDB's `FROM t ...` without a SELECT list means every column.
        for (c, f) in table.schema.fields().iter().enumerate() {
            items.push((None, f.name().clone(), Some(c)));
        }
    }
    let group_exprs: &[Expr] = match &sel.group_by {
        GroupByExpr::Expressions(es, mods) if mods.is_empty() => es,
        other => return Err(unsupported(other, "GROUP BY takes a list of expressions")),
    };
    let any_agg = items
        .iter()
        .any(|(e, _, _)| e.is_some_and(|e| agg_of(e).is_some()));
    let names: Vec<String> = items.iter().map(|(_, n, _)| n.clone()).collect();
    let visible = items.len();
    let (body, mut names) = if any_agg || !group_exprs.is_empty() {
        let mut keys = Vec::new();
        for g in group_exprs {
            // A key may name a select item's alias.
            let e = resolve_alias(g, &sel.projection).unwrap_or(g);
            let k = cx.expr(e)?;
            if k.ty.is_float() {
                return Err(QueryError::Type {
                    pos: pos_of(g),
                    text: g.to_string(),
                    msg: "group keys are integers or text; a floating-point key is not supported"
                        .into(),
                });
            }
            keys.push((g.to_string(), k));
        }
        let mut aggs: Vec<Agg> = Vec::new();
        let mut gitems = Vec::new();
        for (e, _, star) in &items {
            let Some(e) = e else {
                return Err(QueryError::Unsupported {
                    pos: Pos::default(),
                    what: "`*` in a grouped query".into(),
                    text: table.schema.field(star.unwrap_or(0)).name().clone(),
                });
            };
            if let Some((f, arg, node)) = agg_of(e) {
                let arg = match arg {
                    None => None,
                    Some(a) => {
                        let t = cx.expr(a)?;
                        if !t.ty.is_num() || (t.ty == Ty::Bool && f != AggFn::Count) {
                            return Err(QueryError::Type {
                                pos: pos_of(a),
                                text: node.to_string(),
                                msg: format!("{f:?} needs a number, not {}", t.ty.sql())
                                    .to_lowercase(),
                            });
                        }
                        Some(t)
                    }
                };
                gitems.push(GroupItem::Agg(aggs.len()));
                aggs.push(Agg { f, arg });
                continue;
            }
            let text = e.to_string();
            match keys
                .iter()
                .position(|(g, _)| *g == text || matches_item(g, e))
            {
                Some(k) => gitems.push(GroupItem::Key(k)),
                None => {
                    return Err(QueryError::Unsupported {
                        pos: pos_of(*e),
                        what: "in a grouped query, select items are group keys or aggregates (an expression over aggregates is not supported yet)".into(),
                        text,
                    })
                }
            }
        }
        (
            Body::Aggregate {
                keys: keys.into_iter().map(|(_, k)| k).collect(),
                aggs,
                items: gitems,
            },
            names,
        )
    } else {
        let mut outs = Vec::new();
        for (e, name, star) in &items {
            let t = match (e, star) {
                (Some(e), _) => cx.expr(e)?,
                (None, Some(c)) => cx.column(*c, name),
                (None, None) => unreachable!("an item is an expression or a column"),
            };
            outs.push(t);
        }
        (Body::Project(outs), names)
    };
    // ORDER BY: an output by name, alias, position or equal text; else (projections only) a
    // hidden output.
    let mut order = Vec::new();
    let mut body = body;
    if let Some(ob) = &q.order_by {
        let OrderByKind::Expressions(exprs) = &ob.kind else {
            return Err(unsupported(ob, "ORDER BY takes a list of expressions"));
        };
        for o in exprs {
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            let text = o.expr.to_string();
            let by_pos = match &o.expr {
                Expr::Value(v) => match &v.value {
                    Value::Number(n, _) => n.parse::<usize>().ok(),
                    _ => None,
                },
                _ => None,
            };
            let found = if let Some(p) = by_pos {
                if p == 0 || p > visible {
                    return Err(QueryError::Unsupported {
                        pos: pos_of(&o.expr),
                        what: format!("ORDER BY position {p}: there are {visible} select items"),
                        text,
                    });
                }
                Some(p - 1)
            } else {
                names.iter().take(visible).position(|n| {
                    n.eq_ignore_ascii_case(&text) || n.eq_ignore_ascii_case(text.trim_matches('"'))
                })
            };
            let idx = match (found, &mut body) {
                (Some(i), _) => i,
                (None, Body::Project(outs)) => {
                    let t = cx.expr(&o.expr)?;
                    outs.push(t);
                    names.push(text);
                    outs.len() - 1
                }
                (None, Body::Aggregate { .. }) => {
                    return Err(QueryError::Unsupported {
                        pos: pos_of(&o.expr),
                        what: "in a grouped query, ORDER BY names a select item".into(),
                        text,
                    })
                }
            };
            order.push((idx, desc));
        }
    }
    let (mut limit, mut offset) = (None, 0);
    match &q.limit_clause {
        None => {}
        Some(LimitClause::LimitOffset {
            limit: l,
            offset: o,
            limit_by,
        }) if limit_by.is_empty() => {
            if let Some(l) = l {
                limit = Some(const_u64(l, "LIMIT")?);
            }
            if let Some(o) = o {
                offset = const_u64(&o.value, "OFFSET")?;
            }
        }
        Some(other) => return Err(unsupported(other, "LIMIT n [OFFSET m]")),
    }
    Ok(Plan {
        table: cx.table_name,
        filter,
        body,
        names,
        visible,
        order,
        limit,
        offset,
    })
}

fn matches_item(g: &str, e: &Expr) -> bool {
    match e {
        Expr::Identifier(i) => g.eq_ignore_ascii_case(&i.value),
        _ => false,
    }
}

fn resolve_alias<'a>(g: &Expr, items: &'a [SelectItem]) -> Option<&'a Expr> {
    let Expr::Identifier(id) = g else { return None };
    items.iter().find_map(|it| match it {
        SelectItem::ExprWithAlias { expr, alias }
            if alias.value.eq_ignore_ascii_case(&id.value) =>
        {
            Some(expr)
        }
        _ => None,
    })
}

fn const_u64(e: &Expr, what: &str) -> Result<u64> {
    if let Expr::Value(v) = e {
        if let Value::Number(n, _) = &v.value {
            if let Ok(x) = n.parse::<u64>() {
                return Ok(x);
            }
        }
    }
    Err(QueryError::Type {
        pos: pos_of(e),
        text: e.to_string(),
        msg: format!("{what} takes a non-negative integer constant"),
    })
}

fn expr_name(e: &Expr) -> String {
    match e {
        Expr::Identifier(i) => i.value.clone(),
        Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()).unwrap_or_default(),
        _ => e.to_string(),
    }
}

/// If `e` is an aggregate call: the function, its argument (`None` for `count(*)`), the node.
fn agg_of(e: &Expr) -> Option<(AggFn, Option<&Expr>, &Expr)> {
    let Expr::Function(f) = e else { return None };
    let name = f.name.to_string().to_ascii_lowercase();
    let af = match name.as_str() {
        "sum" => AggFn::Sum,
        "count" => AggFn::Count,
        "min" => AggFn::Min,
        "max" => AggFn::Max,
        "avg" | "mean" => AggFn::Avg,
        _ => return None,
    };
    let FunctionArguments::List(l) = &f.args else {
        return None;
    };
    match l.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] if af == AggFn::Count => {
            Some((af, None, e))
        }
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(a))] if l.duplicate_treatment.is_none() => {
            Some((af, Some(a), e))
        }
        _ => None,
    }
}

struct Cx<'a> {
    table: &'a Table,
    udfs: &'a HashMap<String, UserFn>,
    table_name: String,
}

fn leaf(c: String, ty: Ty, sql: String) -> TExpr {
    TExpr {
        cb: c.clone(),
        c,
        ty,
        can_fail: false,
        cols: BTreeSet::new(),
        sql,
        str_col: None,
    }
}

fn arith_ty(a: Ty, b: Ty) -> Ty {
    let r = |t: Ty| match t {
        Ty::Bool | Ty::I32 => 1,
        Ty::I64 => 2,
        Ty::F32 => 3,
        _ => 4,
    };
    match r(a).max(r(b)) {
        1 => Ty::I32,
        2 => Ty::I64,
        3 => Ty::F32,
        _ => Ty::F64,
    }
}

impl Cx<'_> {
    fn column(&self, c: usize, sql: &str) -> TExpr {
        let ty = self.table.ty(c);
        let mut t = leaf(format!("c{c}[i]"), ty, sql.to_string());
        t.cols.insert(c);
        if ty == Ty::Str {
            t.str_col = Some(c);
            t.c = String::new();
            t.cb = String::new();
        }
        t
    }

    fn lookup(&self, id: &ast::Ident) -> Result<TExpr> {
        let fields = self.table.schema.fields();
        let found = fields
            .iter()
            .position(|f| f.name() == &id.value)
            .or_else(|| {
                if id.quote_style.is_some() {
                    None
                } else {
                    fields
                        .iter()
                        .position(|f| f.name().eq_ignore_ascii_case(&id.value))
                }
            });
        match found {
            Some(c) => Ok(self.column(c, &id.value)),
            None => Err(QueryError::UnknownColumn {
                pos: span_pos(id.span),
                name: id.value.clone(),
                table: self.table_name.clone(),
                columns: fields
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    fn num(&self, e: &Expr) -> Result<TExpr> {
        let t = self.expr(e)?;
        if t.ty == Ty::Str {
            return Err(QueryError::Type {
                pos: pos_of(e),
                text: e.to_string(),
                msg: "text columns can only be selected or grouped by; a number is expected here"
                    .into(),
            });
        }
        Ok(t)
    }

    fn boolean(&self, e: &Expr) -> Result<TExpr> {
        let t = self.num(e)?;
        if t.ty != Ty::Bool {
            return Err(QueryError::Type {
                pos: pos_of(e),
                text: e.to_string(),
                msg: format!("a BOOLEAN is expected here, not {}", t.ty.sql()),
            });
        }
        Ok(t)
    }

    fn expr(&self, e: &Expr) -> Result<TExpr> {
        let sql = e.to_string();
        match e {
            Expr::Identifier(id) => self.lookup(id),
            Expr::CompoundIdentifier(parts) => self.lookup(parts.last().expect("non-empty")),
            Expr::Nested(x) => {
                let mut t = self.expr(x)?;
                t.c = format!("({})", t.c);
                t.cb = format!("({})", t.cb);
                t.sql = sql;
                Ok(t)
            }
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => {
                    if let Ok(x) = n.parse::<i64>() {
                        if let Ok(x) = i32::try_from(x) {
                            Ok(leaf(x.to_string(), Ty::I32, sql))
                        } else {
                            Ok(leaf(format!("{x}L"), Ty::I64, sql))
                        }
                    } else if let Ok(x) = n.parse::<f64>() {
                        if x.is_finite() {
                            Ok(leaf(format!("{x:?}"), Ty::F64, sql))
                        } else {
                            Err(QueryError::Type {
                                pos: pos_of(e),
                                text: sql,
                                msg: "a number out of range".into(),
                            })
                        }
                    } else {
                        Err(unsupported(e, "numeric constant"))
                    }
                }
                Value::Boolean(b) => Ok(leaf(if *b { "1" } else { "0" }.into(), Ty::Bool, sql)),
                _ => Err(unsupported(
                    e,
                    "constants are numbers or booleans (text and NULL are not supported)",
                )),
            },
            Expr::UnaryOp { op, expr } => match op {
                UnaryOperator::Minus => {
                    let t = self.num(expr)?;
                    if t.ty == Ty::Bool {
                        return Err(QueryError::Type {
                            pos: pos_of(e),
                            text: sql,
                            msg: "negation of a BOOLEAN".into(),
                        });
                    }
                    Ok(TExpr {
                        c: format!("(-{})", t.c),
                        cb: format!("(-{})", t.cb),
                        sql,
                        ..t
                    })
                }
                UnaryOperator::Plus => self.num(expr),
                UnaryOperator::Not => {
                    let t = self.boolean(expr)?;
                    Ok(TExpr {
                        c: format!("(!{})", t.c),
                        cb: format!("(!{})", t.cb),
                        sql,
                        ..t
                    })
                }
                _ => Err(unsupported(e, "unary operators - + NOT")),
            },
            Expr::BinaryOp { left, op, right } => self.binary(e, left, op, right),
            Expr::Cast {
                expr, data_type, ..
            } => {
                let t = self.num(expr)?;
                let target = match data_type.to_string().to_ascii_uppercase().as_str() {
                    "DOUBLE" | "FLOAT8" | "DOUBLE PRECISION" | "FLOAT64" => Ty::F64,
                    "FLOAT" | "REAL" | "FLOAT4" | "FLOAT32" => Ty::F32,
                    "INT" | "INTEGER" | "INT4" | "INT32" => Ty::I32,
                    "BIGINT" | "INT8" | "INT64" | "LONG" => Ty::I64,
                    _ => {
                        return Err(unsupported(
                            e,
                            "CAST to DOUBLE, FLOAT, INTEGER or BIGINT",
                        ))
                    }
                };
                if t.ty.is_float() && target.is_int() {
                    return Err(unsupported(
                        e,
                        "CAST of a floating-point value to an integer (SQL rounds, C truncates: write floor() or ceil() first)",
                    ));
                }
                Ok(TExpr {
                    c: format!("(({})({}))", target.c(), t.c),
                    cb: format!("(({})({}))", target.c(), t.cb),
                    ty: target,
                    sql,
                    ..t
                })
            }
            Expr::Function(f) => self.call(e, f),
            Expr::Floor { expr, .. } | Expr::Ceil { expr, .. } => {
                let f = if matches!(e, Expr::Floor { .. }) { "floor" } else { "ceil" };
                if !sql.eq_ignore_ascii_case(&format!("{f}({expr})")) {
                    return Err(unsupported(e, "FLOOR(x) and CEIL(x) without a scale or field"));
                }
                let t = self.num(expr)?;
                Ok(TExpr {
                    c: format!("{f}((double)({}))", t.c),
                    cb: format!("{f}((double)({}))", t.cb),
                    ty: Ty::F64,
                    sql,
                    str_col: None,
                    ..t
                })
            }
            _ => Err(unsupported(
                e,
                "expressions are columns, numbers, arithmetic, comparisons, AND/OR/NOT, CAST and function calls",
            )),
        }
    }

    fn binary(&self, e: &Expr, l: &Expr, op: &BinaryOperator, r: &Expr) -> Result<TExpr> {
        use BinaryOperator as B;
        let sql = e.to_string();
        let (a, b) = match op {
            B::And | B::Or => (self.boolean(l)?, self.boolean(r)?),
            _ => (self.num(l)?, self.num(r)?),
        };
        let mut cols = a.cols.clone();
        cols.extend(b.cols.iter().copied());
        let mut can_fail = a.can_fail || b.can_fail;
        let bad = |msg: &str| QueryError::Type {
            pos: pos_of(e),
            text: sql.clone(),
            msg: msg.to_string(),
        };
        let (c, cb, ty) = match op {
            B::Plus | B::Minus | B::Multiply => {
                if a.ty == Ty::Bool || b.ty == Ty::Bool {
                    return Err(bad("arithmetic on a BOOLEAN"));
                }
                let o = match op {
                    B::Plus => "+",
                    B::Minus => "-",
                    _ => "*",
                };
                (
                    format!("({} {o} {})", a.c, b.c),
                    format!("({} {o} {})", a.cb, b.cb),
                    arith_ty(a.ty, b.ty),
                )
            }
            B::Divide => {
                if a.ty == Ty::Bool || b.ty == Ty::Bool {
                    return Err(bad("arithmetic on a BOOLEAN"));
                }
                let t = if a.ty == Ty::F32 && b.ty == Ty::F32 {
                    Ty::F32
                } else {
                    Ty::F64
                };
                let k = t.c();
                (
                    format!("(({k})({}) / ({k})({}))", a.c, b.c),
                    format!("(({k})({}) / ({k})({}))", a.cb, b.cb),
                    t,
                )
            }
            B::DuckIntegerDivide | B::MyIntegerDivide | B::Modulo => {
                if !(a.ty.is_int() && b.ty.is_int()) || a.ty == Ty::Bool || b.ty == Ty::Bool {
                    return Err(bad("`//` and `%` take integers"));
                }
                can_fail = true;
                let o = if matches!(op, B::Modulo) { "%" } else { "/" };
                (
                    format!("({} {o} {})", a.c, b.c),
                    format!("({} {o} {})", a.cb, b.cb),
                    arith_ty(a.ty, b.ty),
                )
            }
            B::Gt | B::Lt | B::GtEq | B::LtEq | B::Eq | B::NotEq => {
                let o = match op {
                    B::Gt => ">",
                    B::Lt => "<",
                    B::GtEq => ">=",
                    B::LtEq => "<=",
                    B::Eq => "==",
                    _ => "!=",
                };
                (
                    format!("({} {o} {})", a.c, b.c),
                    format!("({} {o} {})", a.cb, b.cb),
                    Ty::Bool,
                )
            }
            B::And => (
                format!("({} && {})", a.c, b.c),
                format!("({} & {})", a.cb, b.cb),
                Ty::Bool,
            ),
            B::Or => (
                format!("({} || {})", a.c, b.c),
                format!("({} | {})", a.cb, b.cb),
                Ty::Bool,
            ),
            _ => {
                return Err(unsupported(
                    e,
                    "operators + - * / // % = <> < <= > >= AND OR",
                ))
            }
        };
        Ok(TExpr {
            c,
            cb,
            ty,
            can_fail,
            cols,
            sql,
            str_col: None,
        })
    }

    fn call(&self, e: &Expr, f: &ast::Function) -> Result<TExpr> {
        let sql = e.to_string();
        let name = f.name.to_string();
        let lname = name.to_ascii_lowercase();
        let FunctionArguments::List(list) = &f.args else {
            return Err(unsupported(e, "a function call with an argument list"));
        };
        let mut args = Vec::new();
        for a in &list.args {
            match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => args.push((x, self.num(x)?)),
                _ => return Err(unsupported(e, "arguments are expressions")),
            }
        }
        if matches!(
            lname.as_str(),
            "sum" | "count" | "min" | "max" | "avg" | "mean"
        ) {
            return Err(unsupported(
                e,
                "an aggregate inside an expression or WHERE (aggregates are select items)",
            ));
        }
        let mut cols = BTreeSet::new();
        let mut can_fail = false;
        for (_, t) in &args {
            cols.extend(t.cols.iter().copied());
            can_fail |= t.can_fail;
        }
        let arity = |n: usize| -> Result<()> {
            if args.len() != n {
                return Err(QueryError::Type {
                    pos: pos_of(e),
                    text: sql.clone(),
                    msg: format!("`{name}` takes {n} argument(s), not {}", args.len()),
                });
            }
            Ok(())
        };
        let ct = |i: usize, bitwise: bool| -> String {
            if bitwise {
                args[i].1.cb.clone()
            } else {
                args[i].1.c.clone()
            }
        };
        type Render<'r> = Box<dyn Fn(bool) -> String + 'r>;
        let builtin: Option<(Render, Ty)> = match lname.as_str() {
            "sqrt" | "exp" | "ln" | "floor" | "ceil" => {
                arity(1)?;
                let cf = if lname == "ln" {
                    "log".to_string()
                } else {
                    lname.clone()
                };
                Some((
                    Box::new(move |bw| format!("{cf}((double)({}))", ct(0, bw))),
                    Ty::F64,
                ))
            }
            "power" | "pow" => {
                arity(2)?;
                Some((
                    Box::new(move |bw| {
                        format!("pow((double)({}), (double)({}))", ct(0, bw), ct(1, bw))
                    }),
                    Ty::F64,
                ))
            }
            "abs" => {
                arity(1)?;
                let t = args[0].1.ty;
                if t.is_float() {
                    Some((
                        Box::new(move |bw| format!("fabs((double)({}))", ct(0, bw))),
                        Ty::F64,
                    ))
                } else {
                    Some((
                        Box::new(move |bw| format!("max({0}, -({0}))", ct(0, bw))),
                        arith_ty(t, Ty::I32),
                    ))
                }
            }
            "least" | "greatest" => {
                arity(2)?;
                let t = arith_ty(args[0].1.ty, args[1].1.ty);
                let f = match (lname == "least", t.is_float()) {
                    (true, true) => "fmin",
                    (false, true) => "fmax",
                    (true, false) => "min",
                    (false, false) => "max",
                };
                let k = t.c();
                Some((
                    Box::new(move |bw| format!("{f}(({k})({}), ({k})({}))", ct(0, bw), ct(1, bw))),
                    if t.is_float() { Ty::F64 } else { t },
                ))
            }
            _ => None,
        };
        if let Some((render, ty)) = builtin {
            return Ok(TExpr {
                c: render(false),
                cb: render(true),
                ty,
                can_fail,
                cols,
                sql,
                str_col: None,
            });
        }
        let uf = self
            .udfs
            .get(&name)
            .or_else(|| {
                self.udfs
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(&name))
                    .map(|(_, v)| v)
            })
            .ok_or_else(|| QueryError::UnknownFunction {
                pos: pos_of(e),
                name: name.clone(),
                builtins: BUILTINS.into(),
                user: if self.udfs.is_empty() {
                    "none".into()
                } else {
                    let mut v: Vec<&str> = self.udfs.keys().map(|s| s.as_str()).collect();
                    v.sort();
                    v.join(", ")
                },
            })?;
        let cname = self
            .udfs
            .keys()
            .find(|k| k.eq_ignore_ascii_case(&name))
            .cloned()
            .unwrap_or(name.clone());
        if uf.params.len() != args.len() {
            return Err(QueryError::Type {
                pos: pos_of(e),
                text: sql,
                msg: format!(
                    "the user function `{cname}` takes {} argument(s), not {}",
                    uf.params.len(),
                    args.len()
                ),
            });
        }
        for ((x, t), p) in args.iter().zip(&uf.params) {
            if t.ty.is_float() && p.is_int() {
                return Err(QueryError::Type {
                    pos: pos_of(*x),
                    text: x.to_string(),
                    msg: format!(
                        "the user function `{cname}` takes {} here, and a {} would be truncated; CAST explicitly",
                        p.sql(),
                        t.ty.sql()
                    ),
                });
            }
        }
        let join = |bw: bool| {
            args.iter()
                .zip(&uf.params)
                .map(|((_, t), p)| format!("({})({})", p.c(), if bw { &t.cb } else { &t.c }))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Ok(TExpr {
            c: format!("{cname}({})", join(false)),
            cb: format!("{cname}({})", join(true)),
            ty: uf.ret,
            can_fail: true,
            cols,
            sql,
            str_col: None,
        })
    }
}
