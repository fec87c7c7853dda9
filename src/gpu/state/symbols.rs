//! `__constant__` and `__device__` variables of loaded `%%cuda` cells as arrays: each variable
//! of numbers is listed under its C name (its memory is its module's: never allocated or freed
//! here), written in place where an array would be replaced (`%array`, `%load`, `nb::put` of
//! the same dtype and size), refused where one would be freed or swapped, and dropped with its
//! module when the cell is run again (the new module's variables take the names).
//!
//! Moving them with a backend switch and rebuilding them after a device fault is `switch.rs`.

use super::*;

impl DeviceState {
    /// Refuses to `what` (free, swap) a module variable: its memory is its module's.
    pub(super) fn not_a_symbol(&self, name: &str, what: &str) -> Result<(), GpuError> {
        match self.arrays.get(name).and_then(|a| a.symbol) {
            Some(s) => Err(GpuError::argument(format!(
                "cannot {what} `{name}`: it is the {} variable of a %%cuda cell, which lives as \
                 long as the cell's module (write it with %copy {name} = SRC or nb::put; \
                 re-running the cell makes it anew)",
                s.space
            ))),
            None => Ok(()),
        }
    }

    /// Forgets the arrays that are variables of `module` (about to be unloaded).
    pub(super) fn drop_symbols_of(&mut self, module: ModuleId) {
        self.arrays
            .retain(|_, a| a.symbol.is_none_or(|s| s.module != module));
    }

    /// Lists the variables of a newly loaded cell as arrays (a variable of an older cell of the
    /// same name gives its name up); returns notes for names that a plain array holds.
    pub(super) fn add_symbols(&mut self, cell: &kernels::Cell) -> Vec<String> {
        let mut notes = Vec::new();
        for v in &cell.symbols {
            if self.arrays.get(&v.name).is_some_and(|a| a.symbol.is_none()) {
                notes.push(format!(
                    "note: {} `{}` is not listed as an array: an array of that name exists \
                     (%free it and run the cell again)",
                    v.space, v.name
                ));
                continue;
            }
            self.lost.remove(&v.name);
            self.arrays.insert(
                v.name.clone(),
                Array {
                    dtype: v.dtype,
                    shape: v.shape.clone(),
                    bytes: v.bytes,
                    ptr: v.ptr,
                    last_writer: None,
                    shadow: None,
                    host: None,
                    symbol: Some(SymbolOf {
                        module: cell.module,
                        space: v.space,
                    }),
                    managed: false,
                },
            );
        }
        notes
    }
}
