//! Displays of host arrays from Rust cells: [`Array`]'s `evcxr_display`, [`Array::show`],
//! [`Style`] (the options of `%show`) and [`Frames`] (an animation of 2-D frames).
//!
//! Nothing is drawn here: the raw bytes go to the Jupyter kernel (`render` and `animate`
//! requests), which draws them with the code of `%show` and `%%animate` and either returns the
//! MIME bundle (printed for evcxr between `EVCXR_BEGIN_CONTENT` and `EVCXR_END_CONTENT`) or shows
//! it in the running cell. This keeps image and plotting crates out of every notebook's build.

use crate::{check_shape, err, get_raw, request, Array, Element, ErrorKind, Result};
use serde_json::{json, Map, Value};

/// How an array or an animation is drawn: the options of `%show` plus a title.
///
/// ```ignore
/// a.show_with(&nb::Style::new().cmap("gray").vmin(0.0).vmax(1.0).scale(4).title("a"))?;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Style {
    /// `viridis` (default), `magma`, `inferno`, `plasma`, `turbo`, `cividis`, `gray`, `coolwarm`.
    pub cmap: Option<String>,
    /// Colour range; the finite data range when `None`.
    pub vmin: Option<f64>,
    pub vmax: Option<f64>,
    /// Pixels per element (1 to 64); automatic when `None`.
    pub scale: Option<u32>,
    /// Drawn above an image (as `%show NAME` draws the name) and prefixed to summaries.
    pub title: Option<String>,
}

impl Style {
    pub fn new() -> Style {
        Style::default()
    }
    pub fn cmap(mut self, name: &str) -> Style {
        self.cmap = Some(name.to_string());
        self
    }
    pub fn vmin(mut self, v: f64) -> Style {
        self.vmin = Some(v);
        self
    }
    pub fn vmax(mut self, v: f64) -> Style {
        self.vmax = Some(v);
        self
    }
    pub fn scale(mut self, k: u32) -> Style {
        self.scale = Some(k);
        self
    }
    pub fn title(mut self, t: &str) -> Style {
        self.title = Some(t.to_string());
        self
    }

    /// The request header with this style's fields.
    fn header(&self, op: &str, dtype: &str, shape: &[usize], publish: bool) -> Value {
        json!({
            "op": op, "dtype": dtype, "shape": shape, "publish": publish,
            "cmap": self.cmap, "vmin": self.vmin, "vmax": self.vmax,
            "scale": self.scale, "title": self.title,
        })
    }
}

/// A MIME bundle: (MIME type, content) pairs; images are base64 text.
pub type MimeBundle = Vec<(String, String)>;

fn bundle_of(reply: &Value) -> MimeBundle {
    reply
        .get("bundle")
        .and_then(Value::as_object)
        .map(|m: &Map<String, Value>| {
            m.iter()
                .map(|(k, v)| {
                    let text = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), text)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Print a bundle the way evcxr collects a cell's rich output.
fn print_for_evcxr(bundle: &[(String, String)]) {
    for (mime, text) in bundle {
        println!(
            "EVCXR_BEGIN_CONTENT {mime}\n{}\nEVCXR_END_CONTENT",
            text.trim_end()
        );
    }
}

impl<T: Element> Array<T> {
    /// The MIME bundle this array displays as (drawn by the Jupyter kernel).
    pub fn mime_bundle(&self, style: &Style) -> Result<MimeBundle> {
        check_shape(self.data.len(), &self.shape)?;
        let header = style.header("render", T::DTYPE, &self.shape, false);
        let (reply, _) = request(header, &T::to_le_bytes_vec(&self.data))?;
        Ok(bundle_of(&reply))
    }

    /// Display this array in the running cell now (an image, a table or a summary).
    pub fn show(&self) -> Result<()> {
        self.show_with(&Style::default())
    }

    /// Display this array in the running cell now, drawn with `style`.
    pub fn show_with(&self, style: &Style) -> Result<()> {
        check_shape(self.data.len(), &self.shape)?;
        let header = style.header("render", T::DTYPE, &self.shape, true);
        request(header, &T::to_le_bytes_vec(&self.data)).map(|_| ())
    }

    /// How evcxr shows an `Array` as a cell's value; a short text when the kernel cannot draw it.
    pub fn evcxr_display(&self) {
        match self.mime_bundle(&Style::default()) {
            Ok(b) if !b.is_empty() => print_for_evcxr(&b),
            other => {
                let head: Vec<String> = self
                    .data
                    .iter()
                    .take(10)
                    .map(|v| format!("{v:?}"))
                    .collect();
                let more = if self.data.len() > 10 { ", …" } else { "" };
                let why = match other {
                    Err(e) => format!("\n({e})"),
                    Ok(_) => String::new(),
                };
                let text = format!(
                    "Array<{}> shape {:?}: [{}{}]{why}",
                    T::DTYPE,
                    self.shape,
                    head.join(", "),
                    more
                );
                print_for_evcxr(&[("text/plain".to_string(), text)]);
            }
        }
    }
}

/// Frames of an animation: 2-D arrays of one shape and dtype, shown as an inline animated GIF
/// drawn like `%%animate` (one colour range for all frames, each titled `NAME   frame i/N`).
///
/// ```ignore
/// let mut f = nb::Frames::new().fps(5.0).cmap("magma");
/// for step in 0..20 {
///     nb::exec("%launch step[auto](u, len(u))")?;
///     f.push_array("u")?;                 // or f.push(&array)?
/// }
/// f.show()?;                              // or `f` as the cell's value
/// ```
///
/// The frames are kept in this process (evcxr's child) until shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Frames {
    dtype: Option<String>,
    shape: Vec<usize>,
    bytes: Vec<u8>,
    labels: Vec<Option<String>>,
    fps: f64,
    style: Style,
}

impl Default for Frames {
    fn default() -> Frames {
        Frames::new()
    }
}

impl Frames {
    /// No frames yet; 10 frames per second, viridis.
    pub fn new() -> Frames {
        Frames {
            dtype: None,
            shape: Vec::new(),
            bytes: Vec::new(),
            labels: Vec::new(),
            fps: 10.0,
            style: Style::default(),
        }
    }

    /// Frames per second (above 0, at most 100; GIFs play at most 50).
    pub fn fps(mut self, fps: f64) -> Frames {
        self.fps = fps;
        self
    }

    /// The colormap (as `%show --cmap`).
    pub fn cmap(mut self, name: &str) -> Frames {
        self.style.cmap = Some(name.to_string());
        self
    }

    /// Every drawing option at once (cmap, vmin, vmax, scale; the title prefixes the summary).
    pub fn style(mut self, style: Style) -> Frames {
        self.style = style;
        self
    }

    /// The number of frames so far.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    fn push_bytes(
        &mut self,
        dtype: &str,
        shape: &[usize],
        bytes: &[u8],
        label: Option<&str>,
    ) -> Result<()> {
        if shape.len() != 2 {
            return Err(err(
                ErrorKind::Argument,
                format!("a frame is a 2-D array, not one of shape {shape:?}"),
            ));
        }
        if let Some(d) = &self.dtype {
            if d != dtype || self.shape != shape {
                return Err(err(
                    ErrorKind::Argument,
                    format!(
                        "frame {} is {dtype} {shape:?}, but the first frame was {d} {:?}: every frame has the first one's dtype and shape",
                        self.len() + 1,
                        self.shape
                    ),
                ));
            }
        }
        self.dtype = Some(dtype.to_string());
        self.shape = shape.to_vec();
        self.bytes.extend_from_slice(bytes);
        self.labels.push(label.map(str::to_string));
        Ok(())
    }

    /// Add a copy of a host array as the next frame.
    pub fn push<T: Element>(&mut self, a: &Array<T>) -> Result<()> {
        check_shape(a.data.len(), &a.shape)?;
        self.push_bytes(T::DTYPE, &a.shape, &T::to_le_bytes_vec(&a.data), None)
    }

    /// Add a copy of the device array `name`, as it is now, as the next frame (titled with the
    /// name).
    pub fn push_array(&mut self, name: &str) -> Result<()> {
        let (dtype, shape, bytes) = get_raw(name)?;
        self.push_bytes(&dtype, &shape, &bytes, Some(name))
    }

    fn request(&self, publish: bool) -> Result<Value> {
        let dtype = self
            .dtype
            .as_deref()
            .ok_or_else(|| err(ErrorKind::Argument, "an animation needs at least one frame"))?;
        let mut header = self.style.header("animate", dtype, &self.shape, publish);
        header["frames"] = json!(self.len());
        header["labels"] = json!(self.labels);
        header["fps"] = json!(self.fps);
        request(header, &self.bytes).map(|(reply, _)| reply)
    }

    /// The MIME bundle of the animation (`image/gif` + `text/plain`).
    pub fn mime_bundle(&self) -> Result<MimeBundle> {
        self.request(false).map(|r| bundle_of(&r))
    }

    /// Display the animation in the running cell now.
    pub fn show(&self) -> Result<()> {
        self.request(true).map(|_| ())
    }

    /// How evcxr shows `Frames` as a cell's value.
    pub fn evcxr_display(&self) {
        let bundle = self.mime_bundle().unwrap_or_else(|e| {
            vec![(
                "text/plain".to_string(),
                format!("Frames: {} frames ({e})", self.len()),
            )]
        });
        print_for_evcxr(&bundle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_keep_one_shape_and_dtype() {
        let mut f = Frames::new().fps(4.0).cmap("gray");
        let a = Array::new(vec![1.0f32; 6], vec![2, 3]).unwrap();
        f.push(&a).unwrap();
        f.push(&a).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f.bytes.len(), 2 * 6 * 4);
        let e = f
            .push(&Array::new(vec![1.0f32; 6], vec![3, 2]).unwrap())
            .unwrap_err();
        assert!(e.message.contains("first frame"), "{e}");
        let e = f
            .push(&Array::new(vec![1.0f64; 6], vec![2, 3]).unwrap())
            .unwrap_err();
        assert_eq!(e.ename, "ArgumentError");
        let e = Frames::new()
            .push(&Array::new(vec![1u8; 6], vec![6]).unwrap())
            .unwrap_err();
        assert!(e.message.contains("2-D"), "{e}");
        assert_eq!(
            Frames::new().mime_bundle().unwrap_err().ename,
            "ArgumentError"
        );
    }

    #[test]
    fn style_goes_into_the_request() {
        let h = Style::new()
            .cmap("magma")
            .vmin(0.0)
            .vmax(2.0)
            .scale(3)
            .title("u")
            .header("render", "f32", &[2, 3], true);
        assert_eq!(h["cmap"], "magma");
        assert_eq!(h["vmax"], 2.0);
        assert_eq!(h["scale"], 3);
        assert_eq!(h["shape"], json!([2, 3]));
        assert_eq!(h["publish"], true);
        let b = bundle_of(&json!({"bundle": {"text/plain": "x", "application/json": {"a": 1}}}));
        assert!(b.contains(&("text/plain".to_string(), "x".to_string())));
        assert!(b.contains(&("application/json".to_string(), "{\"a\":1}".to_string())));
    }
}
