//! What a type's derived `Deserialize` knows of its shape: the field names of a struct (of the
//! item struct for a list, of the inner struct for an `Option`), without a value to read.
//!
//! Used by the checks that hold `PROTOCOL.md` to the params, reply and event types, so the
//! documentation and the types cannot drift.
//!
//! A struct with a `#[serde(flatten)]` member is read as a map by serde, so its field names
//! cannot be known this way: [`field_names`] gives none for it.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};

/// The field names of `T` as its `Deserialize` implementation asks for them (in declaration
/// order): of the struct itself, of the items of a `Vec`, of the inner type of an `Option`.
/// Empty for a scalar, a map, or a struct with a flattened member.
pub fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(FieldNames(&mut fields));
    fields
}

/// A deserializer that only records the field list a derived `Deserialize` asks for.
struct FieldNames<'a>(&'a mut &'static [&'static str]);

/// The one item of a probed list.
struct OneItem<'a>(Option<&'a mut &'static [&'static str]>);

impl<'de> SeqAccess<'de> for OneItem<'_> {
    type Error = de::value::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Self::Error> {
        match self.0.take() {
            Some(fields) => seed.deserialize(FieldNames(fields)).map(Some),
            None => Ok(None),
        }
    }
}

impl<'de> de::Deserializer<'de> for FieldNames<'_> {
    type Error = de::value::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("field names recorded"))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_seq(OneItem(Some(self.0)))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct tuple tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Item {
        a: u32,
        b: Option<String>,
    }

    #[test]
    fn names_come_from_the_struct_its_list_and_its_option() {
        assert_eq!(field_names::<Item>(), ["a", "b"]);
        assert_eq!(field_names::<Vec<Item>>(), ["a", "b"]);
        assert_eq!(field_names::<Option<Item>>(), ["a", "b"]);
        assert!(field_names::<String>().is_empty());
        assert!(field_names::<std::collections::BTreeMap<String, u8>>().is_empty());
    }
}
