//! The file-level import graph of one crate, read from its source with `syn`: which file refers
//! to an item defined in which other file of the same crate.
//!
//! An edge is a `use` or a path (`crate::`, `super::`, `self::`, or a name a `use` or `mod`
//! brought into scope) that resolves to an item defined in another file. Re-exports are followed
//! to the file that defines the item, and a `pub use` is not itself an edge, so a parent
//! `mod.rs` that declares or re-exports its children adds nothing. Test modules and
//! `#[cfg(test)]` items are left out.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use syn::visit::Visit;

/// A crate's files (relative to the crate folder) and who refers to whom.
pub struct ImportGraph {
    pub files: Vec<PathBuf>,
    /// `edges[a]` holds the files `a` refers to, with one example path each.
    pub edges: Vec<BTreeMap<usize, String>>,
}

type ModPath = Vec<String>;
type Visited = HashSet<(ModPath, Vec<String>)>;

enum Def {
    /// An item defined in this file.
    Item(usize),
    /// A module (its path).
    Module(ModPath),
    /// A name brought in by `use`: resolve `path` from module `from`.
    Alias { from: ModPath, path: Vec<String> },
}

#[derive(Default)]
struct Scope {
    names: HashMap<String, Vec<Def>>,
    globs: Vec<(ModPath, Vec<String>)>,
}

struct Reference {
    file: usize,
    module: ModPath,
    path: Vec<String>,
    text: String,
}

#[derive(Default)]
struct Collector {
    files: Vec<PathBuf>,
    scopes: HashMap<ModPath, Scope>,
    references: Vec<Reference>,
}

/// Reads the crate rooted at `root` (a `lib.rs`, `main.rs` or `bin/*.rs`) and builds its graph.
pub fn read_crate(crate_dir: &Path, root: &Path) -> Result<ImportGraph> {
    let mut collector = Collector::default();
    collector.load_file(crate_dir, root, Vec::new(), true)?;
    let mut edges = vec![BTreeMap::new(); collector.files.len()];
    for reference in &collector.references {
        let mut targets = BTreeSet::new();
        let mut visited = HashSet::new();
        collector.resolve(
            &reference.module,
            &reference.path,
            &mut targets,
            &mut visited,
        );
        for target in targets {
            if target != reference.file {
                edges[reference.file]
                    .entry(target)
                    .or_insert_with(|| reference.text.clone());
            }
        }
    }
    Ok(ImportGraph {
        files: collector.files,
        edges,
    })
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && {
            let tokens = attr
                .meta
                .require_list()
                .map(|list| list.tokens.to_string())
                .unwrap_or_default();
            tokens == "test" || tokens.starts_with("all (test")
        }
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| {
        if !attr.path().is_ident("path") {
            return None;
        }
        match &attr.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(text),
                        ..
                    }),
                ..
            }) => Some(text.value()),
            _ => None,
        }
    })
}

fn is_public(vis: &syn::Visibility) -> bool {
    !matches!(vis, syn::Visibility::Inherited)
}

impl Collector {
    fn load_file(
        &mut self,
        crate_dir: &Path,
        file: &Path,
        module: ModPath,
        owns_dir: bool,
    ) -> Result<()> {
        let text = std::fs::read_to_string(crate_dir.join(file))
            .with_context(|| format!("reading {}", file.display()))?;
        let parsed =
            syn::parse_file(&text).with_context(|| format!("parsing {}", file.display()))?;
        let index = self.files.len();
        self.files.push(file.to_path_buf());
        // Children of `a/b.rs` live in `a/b/`; of `a/mod.rs`, `lib.rs` or `main.rs`, in `a/`.
        let parent = file.parent().unwrap_or(Path::new("")).to_path_buf();
        let child_dir = if owns_dir {
            parent.clone()
        } else {
            parent.join(file.file_stem().unwrap_or_default())
        };
        self.items(
            crate_dir,
            index,
            &module,
            &parsed.items,
            &child_dir,
            &parent,
        )
    }

    fn items(
        &mut self,
        crate_dir: &Path,
        file: usize,
        module: &ModPath,
        items: &[syn::Item],
        child_dir: &Path,
        file_dir: &Path,
    ) -> Result<()> {
        for item in items {
            let (attrs, name) = item_name(item);
            if is_cfg_test(attrs) {
                continue;
            }
            match item {
                syn::Item::Mod(decl) => {
                    let mut child = module.clone();
                    child.push(decl.ident.to_string());
                    self.define(module, &decl.ident.to_string(), Def::Module(child.clone()));
                    if let Some((_, inline)) = &decl.content {
                        let nested = child_dir.join(decl.ident.to_string());
                        self.items(crate_dir, file, &child, inline, &nested, file_dir)?;
                    } else {
                        let (path, owns_dir) = match path_attr(&decl.attrs) {
                            Some(explicit) => (file_dir.join(explicit), false),
                            None => {
                                let flat = child_dir.join(format!("{}.rs", decl.ident));
                                if crate_dir.join(&flat).exists() {
                                    (flat, false)
                                } else {
                                    (child_dir.join(decl.ident.to_string()).join("mod.rs"), true)
                                }
                            }
                        };
                        if !crate_dir.join(&path).exists() {
                            bail!("module {} has no file at {}", decl.ident, path.display());
                        }
                        self.load_file(crate_dir, &path, child, owns_dir)?;
                    }
                }
                syn::Item::Use(decl) => {
                    let mut uses = Vec::new();
                    flatten_use(&decl.tree, Vec::new(), &mut uses);
                    for (path, alias) in uses {
                        match alias {
                            Some(alias) => self.define(
                                module,
                                &alias,
                                Def::Alias {
                                    from: module.clone(),
                                    path: path.clone(),
                                },
                            ),
                            None => self
                                .scopes
                                .entry(module.clone())
                                .or_default()
                                .globs
                                .push((module.clone(), path.clone())),
                        }
                        if !is_public(&decl.vis) {
                            self.references.push(Reference {
                                file,
                                module: module.clone(),
                                text: format!("use {}", path.join("::")),
                                path,
                            });
                        }
                    }
                }
                syn::Item::Macro(decl) => {
                    if let Some(ident) = &decl.ident {
                        let exported = decl.attrs.iter().any(|a| a.path().is_ident("macro_export"));
                        let home = if exported { Vec::new() } else { module.clone() };
                        self.define(&home, &ident.to_string(), Def::Item(file));
                    }
                    self.reference_paths(file, module, item);
                }
                _ => {
                    if let Some(name) = name {
                        self.define(module, &name, Def::Item(file));
                    }
                    self.reference_paths(file, module, item);
                }
            }
        }
        Ok(())
    }

    fn define(&mut self, module: &ModPath, name: &str, def: Def) {
        self.scopes
            .entry(module.clone())
            .or_default()
            .names
            .entry(name.to_string())
            .or_default()
            .push(def);
    }

    fn reference_paths(&mut self, file: usize, module: &ModPath, item: &syn::Item) {
        let mut visitor = PathVisitor::default();
        visitor.visit_item(item);
        for path in visitor.paths {
            let text = path.join("::");
            self.references.push(Reference {
                file,
                module: module.clone(),
                path,
                text,
            });
        }
    }

    /// Adds to `out` the files defining what `path`, seen from `module`, names.
    fn resolve(
        &self,
        module: &ModPath,
        path: &[String],
        out: &mut BTreeSet<usize>,
        visited: &mut Visited,
    ) {
        if path.is_empty() {
            return;
        }
        let (current, rest) = leading_moves(module, path);
        if rest.is_empty() {
            return;
        }
        self.lookup(&current, rest, out, visited);
    }

    fn lookup(
        &self,
        module: &ModPath,
        path: &[String],
        out: &mut BTreeSet<usize>,
        visited: &mut Visited,
    ) {
        // Each (module, path) pair is looked up once per reference: aliases and globs may loop.
        if path.len() > 16 || !visited.insert((module.clone(), path.to_vec())) {
            return;
        }
        let Some(scope) = self.scopes.get(module) else {
            return;
        };
        let (first, rest) = (&path[0], &path[1..]);
        match scope.names.get(first) {
            Some(defs) => {
                // `a::b` goes through a module named `a` where there is one (a function `a`
                // re-exported beside it lives in the other namespace).
                let through_module =
                    !rest.is_empty() && defs.iter().any(|d| matches!(d, Def::Module(_)));
                for def in defs {
                    if through_module && !matches!(def, Def::Module(_)) {
                        continue;
                    }
                    match def {
                        Def::Item(file) => {
                            out.insert(*file);
                        }
                        Def::Module(child) => {
                            if !rest.is_empty() {
                                self.lookup(child, rest, out, visited);
                            }
                        }
                        Def::Alias { from, path: target } => {
                            let mut full = target.clone();
                            full.extend(rest.iter().cloned());
                            self.resolve(from, &full, out, visited);
                        }
                    }
                }
            }
            None => {
                for (from, glob) in &scope.globs {
                    self.resolve_glob(from, glob, path, out, visited);
                }
            }
        }
    }

    fn resolve_glob(
        &self,
        from: &ModPath,
        glob: &[String],
        path: &[String],
        out: &mut BTreeSet<usize>,
        visited: &mut Visited,
    ) {
        // Find the module the glob names, then look the path up in it.
        let (mut current, rest) = leading_moves(from, glob);
        for segment in rest {
            let Some(Def::Module(child)) = self
                .scopes
                .get(&current)
                .and_then(|scope| scope.names.get(segment))
                .and_then(|defs| defs.iter().find(|d| matches!(d, Def::Module(_))))
            else {
                return;
            };
            current = child.clone();
        }
        self.lookup(&current, path, out, visited);
    }
}

/// Where `path`, seen from `module`, starts after its leading `crate`, `self` and `super`
/// segments, and what is left of it.
fn leading_moves<'p>(module: &ModPath, path: &'p [String]) -> (ModPath, &'p [String]) {
    let mut current = module.clone();
    let mut rest = path;
    loop {
        match rest.first().map(String::as_str) {
            Some("crate") => current.clear(),
            Some("self") => {}
            Some("super") => {
                current.pop();
            }
            _ => return (current, rest),
        }
        rest = &rest[1..];
    }
}

/// The attributes and the name an item defines in its module's namespace.
fn item_name(item: &syn::Item) -> (&[syn::Attribute], Option<String>) {
    match item {
        syn::Item::Const(i) => (&i.attrs, Some(i.ident.to_string())),
        syn::Item::Enum(i) => (&i.attrs, Some(i.ident.to_string())),
        syn::Item::Fn(i) => (&i.attrs, Some(i.sig.ident.to_string())),
        syn::Item::Mod(i) => (&i.attrs, Some(i.ident.to_string())),
        syn::Item::Static(i) => (&i.attrs, Some(i.ident.to_string())),
        syn::Item::Struct(i) => (&i.attrs, Some(i.ident.to_string())),
        syn::Item::Trait(i) => (&i.attrs, Some(i.ident.to_string())),
        syn::Item::TraitAlias(i) => (&i.attrs, Some(i.ident.to_string())),
        syn::Item::Type(i) => (&i.attrs, Some(i.ident.to_string())),
        syn::Item::Union(i) => (&i.attrs, Some(i.ident.to_string())),
        syn::Item::Impl(i) => (&i.attrs, None),
        syn::Item::Use(i) => (&i.attrs, None),
        syn::Item::Macro(i) => (&i.attrs, None),
        syn::Item::ExternCrate(i) => (&i.attrs, None),
        syn::Item::ForeignMod(i) => (&i.attrs, None),
        _ => (&[], None),
    }
}

/// Each path a use tree brings in, with the name it binds (`None` for a glob).
fn flatten_use(
    tree: &syn::UseTree,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut next = prefix;
            next.push(p.ident.to_string());
            flatten_use(&p.tree, next, out);
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                let bound = prefix.last().cloned();
                out.push((prefix, bound));
            } else {
                let mut path = prefix;
                path.push(name.clone());
                out.push((path, Some(name)));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix;
            path.push(r.ident.to_string());
            out.push((path, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix, None)),
        syn::UseTree::Group(g) => {
            for item in &g.items {
                flatten_use(item, prefix.clone(), out);
            }
        }
    }
}

/// Collects every path of two or more segments (and `crate::`/`super::` ones) in an item,
/// skipping nested `#[cfg(test)]` items and local `use`s (which it records as paths too).
#[derive(Default)]
struct PathVisitor {
    paths: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for PathVisitor {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            self.paths
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_cfg_test(item_name(item).0) {
            return;
        }
        if let syn::Item::Use(decl) = item {
            let mut uses = Vec::new();
            flatten_use(&decl.tree, Vec::new(), &mut uses);
            self.paths.extend(uses.into_iter().map(|(path, _)| path));
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        // Paths inside a macro call's arguments (`format!`, `matches!`, `json!`…) are parsed
        // as expressions where they parse.
        if let Ok(args) = mac.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for expr in &args {
                self.visit_expr(expr);
            }
        }
    }
}

/// The circles among a graph's files: each strongly connected set of two or more files.
pub fn circles(graph: &ImportGraph) -> Vec<Vec<usize>> {
    // Tarjan's algorithm, iterative enough for a crate's few hundred files.
    struct State<'g> {
        graph: &'g ImportGraph,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn connect(state: &mut State<'_>, node: usize) {
        state.index[node] = Some(state.next);
        state.low[node] = state.next;
        state.next += 1;
        state.stack.push(node);
        state.on_stack[node] = true;
        let targets: Vec<usize> = state.graph.edges[node].keys().copied().collect();
        for target in targets {
            match state.index[target] {
                None => {
                    connect(state, target);
                    state.low[node] = state.low[node].min(state.low[target]);
                }
                Some(index) if state.on_stack[target] => {
                    state.low[node] = state.low[node].min(index);
                }
                Some(_) => {}
            }
        }
        if Some(state.low[node]) == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack[member] = false;
                component.push(member);
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                state.out.push(component);
            }
        }
    }
    let count = graph.files.len();
    let mut state = State {
        graph,
        index: vec![None; count],
        low: vec![0; count],
        on_stack: vec![false; count],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for node in 0..count {
        if state.index[node].is_none() {
            connect(&mut state, node);
        }
    }
    state.out
}
