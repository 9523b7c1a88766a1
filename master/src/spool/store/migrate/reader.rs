//! A serde deserializer for postcard bytes written by an earlier spool schema: it reads
//! them as the types of a later one, applying each layout change on the way (a field
//! that was not there gets the value old data means, a field whose type changed is
//! read as the old type and converted, a removed field is skipped, a variant inserted
//! before others moves their numbers). Postcard writes no names and no lengths of
//! structs, so the types themselves, through serde, say what comes next; the changes say
//! where an old layout differs from them.
//!
//! Everything read is owned (no borrowed strings), so that a converted value can be
//! read again from a buffer of its own.

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// One change of the spool's layout, made by schema version `schema`.
pub struct Change {
    pub schema: u32,
    /// What changed, in words, for the log.
    pub what: &'static str,
    pub kind: Kind,
}

/// A value's encoding at the schema of the change that made it.
pub type Encoded = Result<Vec<u8>, Error>;

/// Kinds the table of changes has no use for today stay, tested, for the next change.
#[cfg_attr(not(test), allow(dead_code))]
pub enum Kind {
    /// A struct's field, new: data written before has none, and means `value`.
    /// `container` is the struct's name (a struct variant's: `Enum::Variant`).
    FieldAdded {
        container: &'static str,
        field: &'static str,
        value: fn() -> Encoded,
    },
    /// A field whose type changed: `convert` reads the old type and encodes the new.
    FieldChanged {
        container: &'static str,
        field: &'static str,
        convert: fn(&mut Reader<'_>) -> Encoded,
    },
    /// A field taken away, which stood before `before` (`None`: it was the last one):
    /// `skip` reads its old value.
    FieldRemoved {
        container: &'static str,
        before: Option<&'static str>,
        skip: fn(&mut Reader<'_>) -> Result<(), Error>,
    },
    /// A newtype variant whose payload type changed.
    VariantChanged {
        container: &'static str,
        variant: &'static str,
        convert: fn(&mut Reader<'_>) -> Encoded,
    },
    /// A variant inserted as number `index`: those from there on moved up by one.
    VariantInserted { container: &'static str, index: u32 },
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Message(String),
    #[error("{0}")]
    Postcard(#[from] postcard::Error),
    #[error("bad option tag {0}")]
    OptionTag(u8),
    #[error("a spool of an earlier schema holds a value serde cannot read without its type")]
    NotSelfDescribing,
}

impl de::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error::Message(msg.to_string())
    }
}

/// Read a `T` of today's layout from bytes of schema `from`, applying `changes`.
pub fn read<T: DeserializeOwned>(
    bytes: &[u8],
    from: u32,
    upto: u32,
    changes: &[Change],
) -> Result<T, Error> {
    let mut reader = Reader {
        input: bytes,
        from,
        upto,
        changes,
    };
    T::deserialize(&mut reader)
}

/// Encode a value as a change's `value` or `convert` returns it.
pub fn encode<T: serde::Serialize>(value: &T) -> Encoded {
    Ok(postcard::to_stdvec(value)?)
}

/// Reads postcard bytes of schema `from` as the layout of schema `upto`: the changes of
/// the schemas after `from` up to `upto` are applied.
pub struct Reader<'a> {
    input: &'a [u8],
    from: u32,
    upto: u32,
    changes: &'a [Change],
}

impl<'a> Reader<'a> {
    /// Read an old value with a change's function: the layout just before the change.
    fn before<T>(
        &mut self,
        schema: u32,
        f: impl FnOnce(&mut Reader<'a>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut old = Reader {
            input: self.input,
            from: self.from,
            upto: schema - 1,
            changes: self.changes,
        };
        let value = f(&mut old)?;
        self.input = old.input;
        Ok(value)
    }

    fn applies(&self, change: &Change) -> bool {
        change.schema > self.from && change.schema <= self.upto
    }

    fn take<T: DeserializeOwned>(&mut self) -> Result<T, Error> {
        let (value, rest) = postcard::take_from_bytes(self.input)?;
        self.input = rest;
        Ok(value)
    }

    fn len(&mut self) -> Result<usize, Error> {
        let n: u64 = self.take()?;
        usize::try_from(n).map_err(|_| de::Error::custom("a length past this machine's"))
    }

    /// Read one value (a field's or a payload's) of `container`'s `member` with the
    /// changes made to it: converted old values are read again from their encoding.
    fn member<'de, S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
        matches: impl Fn(&Kind) -> bool,
    ) -> Result<S::Value, Error> {
        let mut ours: Vec<&Change> = self
            .changes
            .iter()
            .filter(|c| self.applies(c) && matches(&c.kind))
            .collect();
        if ours.is_empty() {
            return seed.deserialize(self);
        }
        ours.sort_by_key(|c| c.schema);
        // The value as of the latest change so far, encoded at its schema.
        let mut held: Option<(u32, Vec<u8>)> = None;
        for change in ours {
            let bytes = match (&change.kind, &held) {
                (Kind::FieldAdded { value, .. }, _) => value()?,
                (
                    Kind::FieldChanged { convert, .. } | Kind::VariantChanged { convert, .. },
                    None,
                ) => self.before(change.schema, |r| convert(r))?,
                (
                    Kind::FieldChanged { convert, .. } | Kind::VariantChanged { convert, .. },
                    Some((at, bytes)),
                ) => {
                    let mut r = Reader {
                        input: bytes,
                        from: *at,
                        upto: change.schema - 1,
                        changes: self.changes,
                    };
                    convert(&mut r)?
                }
                _ => continue,
            };
            held = Some((change.schema, bytes));
        }
        match held {
            None => seed.deserialize(self),
            Some((at, bytes)) => {
                let mut r = Reader {
                    input: &bytes,
                    from: at,
                    upto: self.upto,
                    changes: self.changes,
                };
                seed.deserialize(&mut r)
            }
        }
    }

    /// Skip the removed fields of `container` that stood before `field`.
    fn skip_removed(&mut self, container: &str, field: Option<&str>) -> Result<(), Error> {
        let mut removed: Vec<&Change> = self
            .changes
            .iter()
            .filter(|c| {
                self.applies(c)
                    && matches!(&c.kind, Kind::FieldRemoved { container: k, before, .. }
                        if *k == container && *before == field)
            })
            .collect();
        // The oldest removal is the one nearest its neighbour in the oldest layout.
        removed.sort_by_key(|c| std::cmp::Reverse(c.schema));
        for change in removed {
            if let Kind::FieldRemoved { skip, .. } = &change.kind {
                self.before(change.schema, |r| skip(r))?;
            }
        }
        Ok(())
    }
}

macro_rules! primitive {
    ($($method:ident $ty:ty => $visit:ident),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            let v: $ty = self.take()?;
            visitor.$visit(v)
        })*
    };
}

impl<'de> de::Deserializer<'de> for &mut Reader<'_> {
    type Error = Error;

    primitive! {
        deserialize_bool bool => visit_bool,
        deserialize_i8 i8 => visit_i8,
        deserialize_i16 i16 => visit_i16,
        deserialize_i32 i32 => visit_i32,
        deserialize_i64 i64 => visit_i64,
        deserialize_i128 i128 => visit_i128,
        deserialize_u8 u8 => visit_u8,
        deserialize_u16 u16 => visit_u16,
        deserialize_u32 u32 => visit_u32,
        deserialize_u64 u64 => visit_u64,
        deserialize_u128 u128 => visit_u128,
        deserialize_f32 f32 => visit_f32,
        deserialize_f64 f64 => visit_f64,
        deserialize_char char => visit_char,
        deserialize_str String => visit_string,
        deserialize_string String => visit_string,
        deserialize_bytes Vec<u8> => visit_byte_buf,
        deserialize_byte_buf Vec<u8> => visit_byte_buf,
    }

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(Error::NotSelfDescribing)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(Error::NotSelfDescribing)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let v: u32 = self.take()?;
        visitor.visit_u32(v)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.take::<u8>()? {
            0 => visitor.visit_none(),
            1 => visitor.visit_some(self),
            tag => Err(Error::OptionTag(tag)),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let left = self.len()?;
        visitor.visit_seq(Elements { reader: self, left })
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_seq(Elements {
            reader: self,
            left: len,
        })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let left = self.len()?;
        visitor.visit_map(Elements { reader: self, left })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.fields(name.to_string(), fields, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(Variant {
            reader: self,
            name,
            variants,
            variant: "",
        })
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

impl Reader<'_> {
    fn fields<'de, V: Visitor<'de>>(
        &mut self,
        container: String,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let changed = self.changes.iter().any(|c| {
            self.applies(c)
                && matches!(&c.kind, Kind::FieldAdded { container: k, .. }
                    | Kind::FieldChanged { container: k, .. }
                    | Kind::FieldRemoved { container: k, .. } if *k == container)
        });
        if !changed {
            return visitor.visit_seq(Elements {
                reader: self,
                left: fields.len(),
            });
        }
        visitor.visit_seq(Fields {
            reader: self,
            container,
            fields,
            next: 0,
        })
    }
}

/// The elements of a sequence, tuple or map, each read with the changes.
struct Elements<'r, 'a> {
    reader: &'r mut Reader<'a>,
    left: usize,
}

impl<'de> SeqAccess<'de> for Elements<'_, '_> {
    type Error = Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.reader).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> MapAccess<'de> for Elements<'_, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.reader).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        seed.deserialize(&mut *self.reader)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// The fields of a struct some change touched.
struct Fields<'r, 'a> {
    reader: &'r mut Reader<'a>,
    container: String,
    fields: &'static [&'static str],
    next: usize,
}

impl<'de> SeqAccess<'de> for Fields<'_, '_> {
    type Error = Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        let Some(field) = self.fields.get(self.next).copied() else {
            return Ok(None);
        };
        self.next += 1;
        self.reader.skip_removed(&self.container, Some(field))?;
        let container = self.container.as_str();
        let value = self.reader.member(seed, |k| match k {
            Kind::FieldAdded {
                container: c,
                field: f,
                ..
            }
            | Kind::FieldChanged {
                container: c,
                field: f,
                ..
            } => *c == container && *f == field,
            _ => false,
        })?;
        if self.next == self.fields.len() {
            self.reader.skip_removed(&self.container, None)?;
        }
        Ok(Some(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len() - self.next)
    }
}

/// An enum's variant: its number moved by the insertions since, its payload changed.
struct Variant<'r, 'a> {
    reader: &'r mut Reader<'a>,
    name: &'static str,
    variants: &'static [&'static str],
    variant: &'static str,
}

impl<'de, 'r, 'a> EnumAccess<'de> for Variant<'r, 'a> {
    type Error = Error;
    type Variant = Variant<'r, 'a>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        mut self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), Error> {
        let mut index: u32 = self.reader.take()?;
        let mut inserted: Vec<(u32, u32)> = self
            .reader
            .changes
            .iter()
            .filter(|c| self.reader.applies(c))
            .filter_map(|c| match &c.kind {
                Kind::VariantInserted { container, index } if *container == self.name => {
                    Some((c.schema, *index))
                }
                _ => None,
            })
            .collect();
        inserted.sort_unstable();
        for (_, at) in inserted {
            if index >= at {
                index += 1;
            }
        }
        self.variant = usize::try_from(index)
            .ok()
            .and_then(|i| self.variants.get(i))
            .copied()
            .unwrap_or("");
        let value = seed.deserialize(IntoDeserializer::<Error>::into_deserializer(index))?;
        Ok((value, self))
    }
}

impl<'de> VariantAccess<'de> for Variant<'_, '_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, Error> {
        let (name, variant) = (self.name, self.variant);
        self.reader.member(seed, |k| {
            matches!(k, Kind::VariantChanged { container, variant: v, .. }
                if *container == name && *v == variant)
        })
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_tuple(self.reader, len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let container = format!("{}::{}", self.name, self.variant);
        self.reader.fields(container, fields, visitor)
    }
}

#[cfg(test)]
mod tests;
