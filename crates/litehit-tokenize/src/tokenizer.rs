//! Text → token ids: a Hugging Face `tokenizer.json` (the `tokenizers` crate, offline) or an
//! encoding embedded in `tiktoken-rs` (`tiktoken:o200k_base`, `tiktoken:cl100k_base`).

use std::path::{Path, PathBuf};

use crate::error::{Result, TokenizeError};
use crate::segments::SegmentSplitter;

/// A loaded tokenizer.
pub enum TextTokenizer {
    /// `tokenizer.json`, with the directory it was found in (for `tokenizer_config.json`).
    HuggingFace {
        tokenizer: Box<tokenizers::Tokenizer>,
        dir: PathBuf,
        /// Caches the pieces between added tokens when that is exact (`crate::segments`).
        segments: Option<Box<SegmentSplitter>>,
    },
    /// An embedded tiktoken encoding; special tokens in the text are encoded as special.
    Tiktoken(Box<tiktoken_rs::CoreBPE>),
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::HuggingFace { dir, .. } => write!(f, "HuggingFace({})", dir.display()),
            Self::Tiktoken(_) => f.write_str("Tiktoken"),
        }
    }
}

impl TextTokenizer {
    /// Loads `tiktoken:NAME`, a `tokenizer.json` file, or a directory holding one.
    pub fn load(spec: &str) -> Result<Self> {
        if let Some(name) = spec.strip_prefix("tiktoken:") {
            let bpe = match name {
                "o200k_base" => tiktoken_rs::o200k_base(),
                "cl100k_base" => tiktoken_rs::cl100k_base(),
                _ => {
                    return Err(TokenizeError::UnknownEncoding {
                        name: name.to_owned(),
                    });
                }
            };
            let bpe = bpe.map_err(|error| TokenizeError::LoadTokenizer {
                path: PathBuf::from(spec),
                message: error.to_string(),
            })?;
            return Ok(Self::Tiktoken(Box::new(bpe)));
        }
        let given = Path::new(spec);
        let file = if given.is_dir() {
            given.join("tokenizer.json")
        } else {
            given.to_path_buf()
        };
        let tokenizer = tokenizers::Tokenizer::from_file(&file).map_err(|error| {
            TokenizeError::LoadTokenizer {
                path: file.clone(),
                message: error.to_string(),
            }
        })?;
        let dir = file
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        Ok(Self::from_hugging_face(tokenizer, dir))
    }

    /// A Hugging Face tokenizer (its `tokenizer_config.json` in `dir`), caching the pieces of
    /// its texts between added tokens when that is exact.
    pub fn from_hugging_face(tokenizer: tokenizers::Tokenizer, dir: PathBuf) -> Self {
        let segments = SegmentSplitter::for_tokenizer(&tokenizer).map(Box::new);
        Self::HuggingFace {
            tokenizer: Box::new(tokenizer),
            dir,
            segments,
        }
    }

    /// The same tokenizer encoding every text whole (no cache of pieces): for comparisons.
    #[must_use]
    pub fn without_segment_cache(self) -> Self {
        match self {
            Self::HuggingFace { tokenizer, dir, .. } => Self::HuggingFace {
                tokenizer,
                dir,
                segments: None,
            },
            other @ Self::Tiktoken(_) => other,
        }
    }

    /// Whether re-sent text between added tokens is taken from a cache (`crate::segments`).
    pub fn caches_segments(&self) -> bool {
        matches!(
            self,
            Self::HuggingFace {
                segments: Some(_),
                ..
            }
        )
    }

    /// Pieces served as a header then a cached tail so far (`crate::cut`): a re-sent reply
    /// not encoded again. `None` without the segment cache.
    pub fn joined_pieces(&self) -> Option<u64> {
        match self {
            Self::HuggingFace {
                segments: Some(segments),
                ..
            } => Some(segments.joined()),
            _ => None,
        }
    }

    /// The directory of `tokenizer.json` (where `tokenizer_config.json` lives), if any.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            Self::HuggingFace { dir, .. } => Some(dir),
            Self::Tiktoken(_) => None,
        }
    }

    /// Encodes each text; `add_special` adds the tokenizer's BOS/EOS as its post-processor
    /// says (tiktoken has none). Hugging Face batches run on its thread pool.
    pub fn encode_batch(
        &self,
        texts: Vec<String>,
        add_special: bool,
    ) -> std::result::Result<Vec<Vec<u32>>, String> {
        match self {
            Self::HuggingFace {
                tokenizer,
                segments: Some(segments),
                ..
            } if !add_special => segments
                .encode_batch(tokenizer, &texts)
                .map_err(|error| error.to_string()),
            Self::HuggingFace { tokenizer, .. } => {
                let encodings = tokenizer
                    .encode_batch_fast(texts, add_special)
                    .map_err(|error| error.to_string())?;
                Ok(encodings
                    .into_iter()
                    .map(|encoding| encoding.get_ids().to_vec())
                    .collect())
            }
            Self::Tiktoken(bpe) => Ok(texts
                .iter()
                .map(|text| bpe.encode_with_special_tokens(text))
                .collect()),
        }
    }

    /// Encodes one text ([`Self::encode_batch`] of one).
    pub fn encode(&self, text: &str, add_special: bool) -> std::result::Result<Vec<u32>, String> {
        let mut batch = self.encode_batch(vec![text.to_owned()], add_special)?;
        Ok(batch.pop().unwrap_or_default())
    }
}
