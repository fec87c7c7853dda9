//! Named colormaps for heatmaps: a value in [0, 1] → an sRGB colour.
//!
//! The maps come from the `colorous` crate (d3's scales): viridis, magma, inferno, plasma, turbo,
//! cividis; `coolwarm` is colorous' RED_BLUE reversed (blue for low values, red for high: colorous
//! has no Moreland cool-warm map); `gray`/`grey` is an exact linear black → white ramp (value
//! `t` → `round(255 t)`, so a u8 image shown with vmin 0 and vmax 255 keeps its grey levels).
//! Non-finite values get [`NAN_COLOR`], which no map above produces.

/// Magenta: the colour of NaN and ±Inf in heatmaps.
pub const NAN_COLOR: [u8; 3] = [255, 0, 255];

/// The names accepted by [`Colormap::by_name`], as listed in error messages.
pub const NAMES: [&str; 9] = [
    "viridis", "magma", "inferno", "plasma", "turbo", "cividis", "gray", "grey", "coolwarm",
];

#[derive(Clone, Copy)]
enum Kind {
    Gradient(colorous::Gradient),
    Reversed(colorous::Gradient),
    Gray,
}

/// A colormap chosen by name.
#[derive(Clone, Copy)]
pub struct Colormap {
    name: &'static str,
    kind: Kind,
}

impl std::fmt::Debug for Colormap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Colormap({})", self.name)
    }
}

impl PartialEq for Colormap {
    fn eq(&self, other: &Colormap) -> bool {
        self.name == other.name
    }
}

impl Default for Colormap {
    fn default() -> Colormap {
        Colormap {
            name: "viridis",
            kind: Kind::Gradient(colorous::VIRIDIS),
        }
    }
}

impl Colormap {
    /// The map called `name` (case-insensitive), or an error that lists the valid names.
    pub fn by_name(name: &str) -> Result<Colormap, String> {
        let lower = name.to_ascii_lowercase();
        let (name, kind) = match lower.as_str() {
            "viridis" => ("viridis", Kind::Gradient(colorous::VIRIDIS)),
            "magma" => ("magma", Kind::Gradient(colorous::MAGMA)),
            "inferno" => ("inferno", Kind::Gradient(colorous::INFERNO)),
            "plasma" => ("plasma", Kind::Gradient(colorous::PLASMA)),
            "turbo" => ("turbo", Kind::Gradient(colorous::TURBO)),
            "cividis" => ("cividis", Kind::Gradient(colorous::CIVIDIS)),
            "gray" | "grey" => ("gray", Kind::Gray),
            "coolwarm" => ("coolwarm", Kind::Reversed(colorous::RED_BLUE)),
            _ => {
                return Err(format!(
                    "unknown colormap '{name}'; use one of {}",
                    NAMES.join(", ")
                ))
            }
        };
        Ok(Colormap { name, kind })
    }

    /// The map's canonical name (`"gray"` for `grey`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The colour of `t`, clamped to [0, 1]; NaN gives [`NAN_COLOR`].
    pub fn rgb(&self, t: f64) -> [u8; 3] {
        if t.is_nan() {
            return NAN_COLOR;
        }
        let t = t.clamp(0.0, 1.0);
        match self.kind {
            Kind::Gradient(g) => g.eval_continuous(t).into_array(),
            Kind::Reversed(g) => g.eval_continuous(1.0 - t).into_array(),
            Kind::Gray => {
                let v = (t * 255.0).round() as u8;
                [v, v, v]
            }
        }
    }
}

/// Maps values to [0, 1] between `vmin` and `vmax`; a flat range maps everything to 0.5.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Norm {
    pub vmin: f64,
    pub vmax: f64,
}

impl Norm {
    /// `None` for a non-finite value.
    pub fn t(&self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        let span = self.vmax - self.vmin;
        if span.is_nan() || span <= 0.0 || !span.is_finite() {
            return Some(0.5);
        }
        Some(((v - self.vmin) / span).clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colormaps_match_colorous_and_reject_unknown_names() {
        let v = Colormap::by_name("viridis").expect("a valid colormap");
        for t in [0.0, 0.3, 1.0] {
            assert_eq!(v.rgb(t), colorous::VIRIDIS.eval_continuous(t).into_array());
        }
        let m = Colormap::by_name("MAGMA").expect("a valid colormap");
        assert_eq!(
            m.rgb(0.7),
            colorous::MAGMA.eval_continuous(0.7).into_array()
        );
        let cw = Colormap::by_name("coolwarm").expect("a valid colormap");
        let (lo, hi) = (cw.rgb(0.0), cw.rgb(1.0));
        assert!(lo[2] > lo[0], "coolwarm low end is blue: {lo:?}");
        assert!(hi[0] > hi[2], "coolwarm high end is red: {hi:?}");
        let g = Colormap::by_name("grey").expect("a valid colormap");
        assert_eq!(g.name(), "gray");
        assert_eq!(g.rgb(0.0), [0, 0, 0]);
        assert_eq!(g.rgb(1.0), [255, 255, 255]);
        assert_eq!(g.rgb(100.0 / 255.0), [100, 100, 100]);
        assert_eq!(g.rgb(f64::NAN), NAN_COLOR);
        for name in NAMES {
            let c = Colormap::by_name(name).expect("a valid colormap");
            for i in 0..=20 {
                assert_ne!(c.rgb(i as f64 / 20.0), NAN_COLOR, "{name} produces magenta");
            }
        }
        let e = Colormap::by_name("jet").unwrap_err();
        assert!(
            e.contains("'jet'") && e.contains("viridis") && e.contains("coolwarm"),
            "{e}"
        );
    }

    #[test]
    fn norm_clamps_and_handles_flat_ranges() {
        let n = Norm {
            vmin: 2.0,
            vmax: 4.0,
        };
        assert_eq!(n.t(3.0), Some(0.5));
        assert_eq!(n.t(10.0), Some(1.0));
        assert_eq!(n.t(-1.0), Some(0.0));
        assert_eq!(n.t(f64::INFINITY), None);
        let flat = Norm {
            vmin: 1.0,
            vmax: 1.0,
        };
        assert_eq!(flat.t(1.0), Some(0.5));
    }
}
