//! Converts a faster-whisper (CTranslate2) Whisper model to whisper.cpp's ggml file, without
//! loss: the weights are copied (float16 stays float16), fused attention projections are split
//! back, and the mel filter bank and tokenizer vocabulary come from openai-whisper's assets.
//!
//! Input layout (CTranslate2 `model.bin`, format version 5 or 6, little-endian): `u32
//! version`, spec name string (`u16` length + bytes, NUL padded), `u32` spec revision, `u32`
//! variable count, then per variable: name string, `u8` rank, rank × `u32` dims, `u8` dtype
//! (0 f32, 1 i8, 2 i16, 3 i32, 4 f16), `u32` byte count, raw data.
//!
//! Output layout (ggml, ftype 1): magic `0x67676d6c`; eleven `i32` hyperparameters; the mel
//! filters (`i32` rows, `i32` cols, f32 data); the vocabulary (`i32` count, then `i32` length +
//! bytes per token); then per tensor `i32` rank, `i32` name length, `i32` type (0 f32, 1 f16),
//! dims innermost first, name, data. 1-D tensors, the conv biases (as `[n, 1]`) and the
//! positional embeddings are f32; every other tensor is f16.

use super::ModelError;
use base64::Engine as _;
use half::f16;
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// What a conversion produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertReport {
    /// The ggml file written.
    pub path: PathBuf,
    /// Tensors written.
    pub tensors: usize,
    /// File size, bytes.
    pub bytes: u64,
    /// Model type by encoder layers (`tiny`, `base`, …).
    pub model_type: &'static str,
    /// True for an English-only model (vocabulary below 51865).
    pub english_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DType {
    F32,
    F16,
    Other(u8),
}

struct Var<'a> {
    dims: Vec<usize>,
    dtype: DType,
    data: &'a [u8],
}

impl Var<'_> {
    fn elements(&self) -> usize {
        self.dims.iter().product::<usize>().max(1)
    }

    fn scalar_i64(&self) -> Option<i64> {
        match (self.dtype, self.data.len()) {
            (DType::Other(3), 4) => Some(i64::from(i32::from_le_bytes(self.data.try_into().ok()?))),
            (DType::Other(2), 2) => Some(i64::from(i16::from_le_bytes(self.data.try_into().ok()?))),
            (DType::Other(1), 1) => Some(i64::from(self.data[0] as i8)),
            _ => None,
        }
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ModelError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| bad("model.bin ends early (truncated download?)"))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, ModelError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, ModelError> {
        Ok(u16::from_le_bytes([self.u8()?, self.u8()?]))
    }
    fn u32(&mut self) -> Result<u32, ModelError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn string(&mut self) -> Result<String, ModelError> {
        let n = self.u16()? as usize;
        let raw = self.take(n)?;
        let raw = raw.split(|&b| b == 0).next().unwrap_or_default();
        String::from_utf8(raw.to_vec()).map_err(|_| bad("a variable name is not UTF-8"))
    }
}

fn bad(msg: &str) -> ModelError {
    ModelError::BadModel(format!("not a CTranslate2 Whisper model: {msg}"))
}

fn parse_ct2(buf: &[u8]) -> Result<BTreeMap<String, Var<'_>>, ModelError> {
    let mut r = Reader { buf, pos: 0 };
    let version = r.u32()?;
    if !(5..=6).contains(&version) {
        return Err(bad(&format!(
            "binary version {version} (supported: 5 and 6)"
        )));
    }
    let spec = r.string()?;
    if spec != "WhisperSpec" {
        return Err(bad(&format!("spec {spec:?}, expected \"WhisperSpec\"")));
    }
    let _revision = r.u32()?;
    let count = r.u32()? as usize;
    let mut vars = BTreeMap::new();
    for _ in 0..count {
        let name = r.string()?;
        let rank = r.u8()? as usize;
        let dims = (0..rank)
            .map(|_| r.u32().map(|d| d as usize))
            .collect::<Result<Vec<_>, _>>()?;
        let dtype = match r.u8()? {
            0 => DType::F32,
            4 => DType::F16,
            other => DType::Other(other),
        };
        let nbytes = r.u32()? as usize;
        let data = r.take(nbytes)?;
        vars.insert(name, Var { dims, dtype, data });
    }
    if vars.keys().any(|k| k.ends_with("weight_scale")) {
        return Err(ModelError::BadModel(
            "this CTranslate2 model is quantized (int8): it cannot be converted without loss — \
             use a float16 or float32 export (ct2-transformers-converter --quantization float16)"
                .into(),
        ));
    }
    Ok(vars)
}

/// The openai-whisper assets a conversion needs: the 80-band mel filter bank and the BPE
/// vocabularies.
pub struct WhisperAssets {
    mel: (usize, usize, Vec<f32>),
    dir: PathBuf,
}

impl WhisperAssets {
    /// Loads `mel_80.npy` from `dir` (also holding `gpt2.tiktoken` and
    /// `multilingual.tiktoken`). Errors name the missing file and how to get it.
    pub fn load(dir: &Path) -> Result<WhisperAssets, ModelError> {
        let mel_path = dir.join("mel_80.npy");
        let raw = fs::read(&mel_path).map_err(|e| missing_asset(&mel_path, &e))?;
        let mel = super::npy::read_f32_2d(&raw)
            .map_err(|e| ModelError::BadModel(format!("{}: {e}", mel_path.display())))?;
        Ok(WhisperAssets {
            mel,
            dir: dir.to_path_buf(),
        })
    }

    fn vocab(&self, multilingual: bool) -> Result<Vec<Vec<u8>>, ModelError> {
        let name = if multilingual {
            "multilingual.tiktoken"
        } else {
            "gpt2.tiktoken"
        };
        let path = self.dir.join(name);
        let text = fs::read_to_string(&path).map_err(|e| missing_asset(&path, &e))?;
        let mut tokens = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let Some(b64) = line.split_whitespace().next() else {
                continue;
            };
            let tok = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| ModelError::BadModel(format!("{}:{}: {e}", path.display(), n + 1)))?;
            tokens.push(tok);
        }
        Ok(tokens)
    }
}

fn missing_asset(path: &Path, e: &std::io::Error) -> ModelError {
    ModelError::NotInstalled {
        what: format!("whisper asset {}", path.display()),
        reason: e.to_string(),
        fix: "run ./scripts/setup --voice (it unpacks openai-whisper's assets into the voice model cache)".into(),
    }
}

/// Converts the CTranslate2 model in `model_dir` (its `model.bin`) to a ggml file at `out`,
/// written to `out.part` first and renamed at the end. `progress` receives 0..=1.
/// Errors: [`ModelError::BadModel`] for a file that is not a float CTranslate2 Whisper model,
/// [`ModelError::NotInstalled`] when the assets are missing, [`ModelError::Io`].
pub fn convert_ct2_to_ggml(
    model_dir: &Path,
    assets: &WhisperAssets,
    out: &Path,
    progress: &mut dyn FnMut(f32),
) -> Result<ConvertReport, ModelError> {
    let bin = model_dir.join("model.bin");
    let buf = fs::read(&bin).map_err(|e| ModelError::Io(format!("{}: {e}", bin.display())))?;
    let vars = parse_ct2(&buf)?;
    let hp = Hyper::from_vars(&vars)?;
    let vocab = assets.vocab(hp.n_vocab >= 51865)?;
    let part = out.with_extension("bin.part");
    let file =
        fs::File::create(&part).map_err(|e| ModelError::Io(format!("{}: {e}", part.display())))?;
    let mut w = GgmlWriter {
        out: BufWriter::new(file),
        tensors: 0,
    };
    let io = |e: std::io::Error| ModelError::Io(format!("{}: {e}", part.display()));
    w.header(&hp, &assets.mel, &vocab).map_err(io)?;
    let plan = tensor_plan(&hp);
    for (i, t) in plan.iter().enumerate() {
        w.tensor(t, &vars)?;
        progress((i + 1) as f32 / plan.len() as f32);
    }
    w.out.flush().map_err(io)?;
    drop(w.out);
    fs::rename(&part, out).map_err(|e| ModelError::Io(format!("{}: {e}", out.display())))?;
    let bytes = fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    Ok(ConvertReport {
        path: out.to_path_buf(),
        tensors: plan.len(),
        bytes,
        model_type: hp.model_type(),
        english_only: hp.n_vocab < 51865,
    })
}

struct Hyper {
    n_vocab: usize,
    n_audio_ctx: usize,
    n_audio_state: usize,
    n_audio_head: usize,
    n_audio_layer: usize,
    n_text_ctx: usize,
    n_text_state: usize,
    n_text_head: usize,
    n_text_layer: usize,
    n_mels: usize,
}

impl Hyper {
    fn from_vars(v: &BTreeMap<String, Var<'_>>) -> Result<Hyper, ModelError> {
        let dims = |name: &str| {
            v.get(name)
                .map(|x| x.dims.clone())
                .ok_or_else(|| bad(&format!("variable {name} is missing")))
        };
        let scalar = |name: &str| {
            v.get(name)
                .and_then(Var::scalar_i64)
                .map(|x| x as usize)
                .ok_or_else(|| bad(&format!("scalar {name} is missing")))
        };
        let layers = |prefix: &str| {
            (0..)
                .take_while(|i| {
                    v.keys()
                        .any(|k| k.starts_with(&format!("{prefix}/layer_{i}/")))
                })
                .count()
        };
        let emb = dims("decoder/embeddings/weight")?;
        let enc_pos = dims("encoder/position_encodings/encodings")?;
        let dec_pos = dims("decoder/position_encodings/encodings")?;
        let conv1 = dims("encoder/conv1/weight")?;
        let [n_vocab, n_text_state] = emb[..] else {
            return Err(bad("decoder/embeddings/weight is not 2-D"));
        };
        let hp = Hyper {
            n_vocab,
            n_audio_ctx: enc_pos[0],
            n_audio_state: *enc_pos.get(1).ok_or_else(|| bad("bad encoder positions"))?,
            n_audio_head: scalar("encoder/num_heads")?,
            n_audio_layer: layers("encoder"),
            n_text_ctx: dec_pos[0],
            n_text_state,
            n_text_head: scalar("decoder/num_heads")?,
            n_text_layer: layers("decoder"),
            n_mels: *conv1.get(1).ok_or_else(|| bad("bad conv1 shape"))?,
        };
        if hp.n_audio_layer == 0 || hp.n_text_layer == 0 {
            return Err(bad("no encoder or decoder layers"));
        }
        Ok(hp)
    }

    fn model_type(&self) -> &'static str {
        match self.n_audio_layer {
            4 => "tiny",
            6 => "base",
            12 => "small",
            24 => "medium",
            32 => "large",
            _ => "unknown",
        }
    }
}

/// Which part of a CTranslate2 variable becomes one ggml tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// The whole variable.
    All,
    /// Rows `[k·n/parts, (k+1)·n/parts)` of the first dimension.
    Slice { k: usize, parts: usize },
}

struct TensorSpec {
    ggml: String,
    ct2: String,
    part: Part,
    /// Written as f32 (else f16).
    f32: bool,
    /// Extra trailing unit dimension (conv biases are `[n, 1]`).
    as_column: bool,
}

fn spec(ggml: String, ct2: String, part: Part) -> TensorSpec {
    TensorSpec {
        ggml,
        ct2,
        part,
        f32: false,
        as_column: false,
    }
}

/// Every tensor whisper.cpp loads, in the order written, with its CTranslate2 source.
fn tensor_plan(hp: &Hyper) -> Vec<TensorSpec> {
    let mut plan = Vec::new();
    let mut add = |ggml: String, ct2: String, part: Part| plan.push(spec(ggml, ct2, part));
    for conv in ["conv1", "conv2"] {
        add(
            format!("encoder.{conv}.weight"),
            format!("encoder/{conv}/weight"),
            Part::All,
        );
        add(
            format!("encoder.{conv}.bias"),
            format!("encoder/{conv}/bias"),
            Part::All,
        );
    }
    add(
        "encoder.positional_embedding".into(),
        "encoder/position_encodings/encodings".into(),
        Part::All,
    );
    for i in 0..hp.n_audio_layer {
        block(
            &mut add,
            &format!("encoder.blocks.{i}"),
            &format!("encoder/layer_{i}"),
            false,
        );
    }
    add(
        "encoder.ln_post.weight".into(),
        "encoder/layer_norm/gamma".into(),
        Part::All,
    );
    add(
        "encoder.ln_post.bias".into(),
        "encoder/layer_norm/beta".into(),
        Part::All,
    );
    add(
        "decoder.token_embedding.weight".into(),
        "decoder/embeddings/weight".into(),
        Part::All,
    );
    add(
        "decoder.positional_embedding".into(),
        "decoder/position_encodings/encodings".into(),
        Part::All,
    );
    for i in 0..hp.n_text_layer {
        block(
            &mut add,
            &format!("decoder.blocks.{i}"),
            &format!("decoder/layer_{i}"),
            true,
        );
    }
    add(
        "decoder.ln.weight".into(),
        "decoder/layer_norm/gamma".into(),
        Part::All,
    );
    add(
        "decoder.ln.bias".into(),
        "decoder/layer_norm/beta".into(),
        Part::All,
    );
    for t in &mut plan {
        let positional = t.ggml.ends_with("positional_embedding");
        let conv_bias = t.ggml.starts_with("encoder.conv") && t.ggml.ends_with(".bias");
        t.as_column = conv_bias;
        t.f32 = positional
            || conv_bias
            || t.ct2.ends_with("bias")
            || t.ct2.ends_with("gamma")
            || t.ct2.ends_with("beta");
    }
    plan
}

/// One transformer block: self-attention (q|k|v fused; key without bias), optional
/// cross-attention (query alone, k|v fused; key without bias), MLP, and their layer norms.
fn block(add: &mut impl FnMut(String, String, Part), g: &str, c: &str, cross: bool) {
    let ln = |add: &mut dyn FnMut(String, String, Part), gn: &str, cn: &str| {
        add(
            format!("{g}.{gn}.weight"),
            format!("{c}/{cn}/gamma"),
            Part::All,
        );
        add(
            format!("{g}.{gn}.bias"),
            format!("{c}/{cn}/beta"),
            Part::All,
        );
    };
    let lin =
        |add: &mut dyn FnMut(String, String, Part), gn: &str, cn: &str, part: Part, bias: bool| {
            add(format!("{g}.{gn}.weight"), format!("{c}/{cn}/weight"), part);
            if bias {
                add(format!("{g}.{gn}.bias"), format!("{c}/{cn}/bias"), part);
            }
        };
    ln(add, "attn_ln", "self_attention/layer_norm");
    lin(
        add,
        "attn.query",
        "self_attention/linear_0",
        Part::Slice { k: 0, parts: 3 },
        true,
    );
    lin(
        add,
        "attn.key",
        "self_attention/linear_0",
        Part::Slice { k: 1, parts: 3 },
        false,
    );
    lin(
        add,
        "attn.value",
        "self_attention/linear_0",
        Part::Slice { k: 2, parts: 3 },
        true,
    );
    lin(add, "attn.out", "self_attention/linear_1", Part::All, true);
    if cross {
        ln(add, "cross_attn_ln", "attention/layer_norm");
        lin(
            add,
            "cross_attn.query",
            "attention/linear_0",
            Part::All,
            true,
        );
        lin(
            add,
            "cross_attn.key",
            "attention/linear_1",
            Part::Slice { k: 0, parts: 2 },
            false,
        );
        lin(
            add,
            "cross_attn.value",
            "attention/linear_1",
            Part::Slice { k: 1, parts: 2 },
            true,
        );
        lin(add, "cross_attn.out", "attention/linear_2", Part::All, true);
    }
    ln(add, "mlp_ln", "ffn/layer_norm");
    lin(add, "mlp.0", "ffn/linear_0", Part::All, true);
    lin(add, "mlp.2", "ffn/linear_1", Part::All, true);
}

struct GgmlWriter<W: Write> {
    out: W,
    tensors: usize,
}

impl<W: Write> GgmlWriter<W> {
    fn i32(&mut self, v: usize) -> std::io::Result<()> {
        let v = i32::try_from(v).map_err(|_| std::io::Error::other("value exceeds i32"))?;
        self.out.write_all(&v.to_le_bytes())
    }

    fn header(
        &mut self,
        hp: &Hyper,
        mel: &(usize, usize, Vec<f32>),
        vocab: &[Vec<u8>],
    ) -> std::io::Result<()> {
        self.out.write_all(&0x6767_6d6c_i32.to_le_bytes())?;
        for v in [
            hp.n_vocab,
            hp.n_audio_ctx,
            hp.n_audio_state,
            hp.n_audio_head,
            hp.n_audio_layer,
            hp.n_text_ctx,
            hp.n_text_state,
            hp.n_text_head,
            hp.n_text_layer,
            hp.n_mels,
            1,
        ] {
            self.i32(v)?;
        }
        self.i32(mel.0)?;
        self.i32(mel.1)?;
        for x in &mel.2 {
            self.out.write_all(&x.to_le_bytes())?;
        }
        self.i32(vocab.len())?;
        for tok in vocab {
            self.i32(tok.len())?;
            self.out.write_all(tok)?;
        }
        Ok(())
    }

    fn tensor(
        &mut self,
        t: &TensorSpec,
        vars: &BTreeMap<String, Var<'_>>,
    ) -> Result<(), ModelError> {
        let var = vars
            .get(&t.ct2)
            .ok_or_else(|| bad(&format!("variable {} is missing", t.ct2)))?;
        let width = match var.dtype {
            DType::F32 => 4,
            DType::F16 => 2,
            DType::Other(d) => {
                return Err(bad(&format!(
                    "{} has dtype {d}; only float16/float32 convert",
                    t.ct2
                )));
            }
        };
        if var.data.len() != var.elements() * width {
            return Err(bad(&format!(
                "{} has {} bytes for shape {:?}",
                t.ct2,
                var.data.len(),
                var.dims
            )));
        }
        let mut dims = var.dims.clone();
        let data = match t.part {
            Part::All => var.data,
            Part::Slice { k, parts } => {
                let rows = dims[0];
                if rows % parts != 0 {
                    return Err(bad(&format!(
                        "{} rows {rows} do not split in {parts}",
                        t.ct2
                    )));
                }
                let per = var.data.len() / parts;
                dims[0] = rows / parts;
                &var.data[k * per..(k + 1) * per]
            }
        };
        if t.as_column {
            dims.push(1);
        }
        let io = |e: std::io::Error| ModelError::Io(e.to_string());
        self.i32(dims.len()).map_err(io)?;
        self.i32(t.ggml.len()).map_err(io)?;
        self.i32(if t.f32 { 0 } else { 1 }).map_err(io)?;
        for d in dims.iter().rev() {
            self.i32(*d).map_err(io)?;
        }
        self.out.write_all(t.ggml.as_bytes()).map_err(io)?;
        write_converted(&mut self.out, data, var.dtype, t.f32).map_err(io)?;
        self.tensors += 1;
        Ok(())
    }
}

fn write_converted(
    out: &mut impl Write,
    data: &[u8],
    from: DType,
    to_f32: bool,
) -> std::io::Result<()> {
    match (from, to_f32) {
        (DType::F32, true) | (DType::F16, false) => out.write_all(data),
        (DType::F16, true) => {
            for c in data.chunks_exact(2) {
                let v = f16::from_le_bytes([c[0], c[1]]).to_f32();
                out.write_all(&v.to_le_bytes())?;
            }
            Ok(())
        }
        (DType::F32, false) => {
            for c in data.chunks_exact(4) {
                let v = f16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
                out.write_all(&v.to_le_bytes())?;
            }
            Ok(())
        }
        (DType::Other(_), _) => Err(std::io::Error::other("unsupported dtype")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var_bytes(name: &str, dims: &[u32], dtype: u8, data: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend((name.len() as u16 + 1).to_le_bytes());
        b.extend(name.as_bytes());
        b.push(0);
        b.push(dims.len() as u8);
        for d in dims {
            b.extend(d.to_le_bytes());
        }
        b.push(dtype);
        b.extend((data.len() as u32).to_le_bytes());
        b.extend(data);
        b
    }

    fn header(count: u32) -> Vec<u8> {
        let mut b = 6u32.to_le_bytes().to_vec();
        b.extend(12u16.to_le_bytes());
        b.extend(b"WhisperSpec\0");
        b.extend(3u32.to_le_bytes());
        b.extend(count.to_le_bytes());
        b
    }

    #[test]
    fn quantized_models_are_refused_with_a_reason() {
        let mut b = header(1);
        b.extend(var_bytes(
            "encoder/layer_0/ffn/linear_0/weight_scale",
            &[2],
            0,
            &[0; 8],
        ));
        let e = parse_ct2(&b).err().expect("refused");
        assert!(e.to_string().contains("quantized"), "{e}");
    }

    #[test]
    fn other_specs_and_truncated_files_are_refused() {
        let mut b = 6u32.to_le_bytes().to_vec();
        b.extend(10u16.to_le_bytes());
        b.extend(b"BertSpec\0\0");
        assert!(
            parse_ct2(&b)
                .err()
                .expect("refused")
                .to_string()
                .contains("BertSpec")
        );
        let mut b = header(1);
        b.extend(&var_bytes("x", &[4], 0, &[0; 16])[..10]);
        assert!(
            parse_ct2(&b)
                .err()
                .expect("refused")
                .to_string()
                .contains("truncated")
        );
    }

    #[test]
    fn fused_qkv_splits_into_three_and_key_has_no_bias() {
        let mut names = Vec::new();
        block(
            &mut |g: String, c: String, p: Part| names.push((g, c, p)),
            "e.blocks.0",
            "e/layer_0",
            false,
        );
        let key: Vec<_> = names
            .iter()
            .filter(|(g, _, _)| g.contains("attn.key"))
            .collect();
        assert_eq!(key.len(), 1, "key weight only");
        assert_eq!(key[0].2, Part::Slice { k: 1, parts: 3 });
        assert_eq!(names.len(), 15);
    }
}
