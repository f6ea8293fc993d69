// SPDX-License-Identifier: Apache-2.0
#include "export/parquet_writer.hpp"

#include <cstring>
#include <utility>

namespace gpuwhy::exporter::parquet {
namespace {

// Thrift's compact protocol, the part Parquet's footer and page headers use: structs of i32,
// i64, binary, list and struct fields (field ids as deltas), zigzag varints.
class Thrift {
 public:
  enum : uint8_t {
    kTrue = 1,
    kFalse = 2,
    kI32 = 5,
    kI64 = 6,
    kBinary = 8,
    kList = 9,
    kStruct = 12,
  };
  void i32(int16_t id, int32_t v) { field(id, kI32), zigzag(v); }
  void i64(int16_t id, int64_t v) { field(id, kI64), zigzag(v); }
  void boolean(int16_t id, bool v) { field(id, v ? kTrue : kFalse); }
  void binary(int16_t id, const std::string& v) {
    field(id, kBinary);
    varint(v.size());
    buf_ += v;
  }
  // A nested struct: begin, its fields, end (field ids restart inside).
  void begin_struct(int16_t id) {
    field(id, kStruct);
    ids_.push_back(last_);
    last_ = 0;
  }
  void end_struct() {
    buf_ += '\0';
    last_ = ids_.back();
    ids_.pop_back();
  }
  // A list field of `n` elements of `type`; struct elements are then written with
  // begin_element()/end_struct(), i32 elements with element_i32(), strings with element_binary().
  void list(int16_t id, uint8_t type, size_t n) {
    field(id, kList);
    if (n < 15) {
      buf_ += static_cast<char>((n << 4) | type);
    } else {
      buf_ += static_cast<char>(0xf0 | type);
      varint(n);
    }
  }
  void begin_element() {
    ids_.push_back(last_);
    last_ = 0;
  }
  void element_i32(int32_t v) { zigzag(v); }
  void element_binary(const std::string& v) {
    varint(v.size());
    buf_ += v;
  }
  // Ends the top-level struct.
  std::string done() {
    buf_ += '\0';
    return std::move(buf_);
  }
  // Raw bytes of an already encoded struct list's elements (the row groups).
  void raw(const std::string& bytes) { buf_ += bytes; }

 private:
  void field(int16_t id, uint8_t type) {
    const int delta = id - last_;
    if (delta > 0 && delta <= 15) {
      buf_ += static_cast<char>((delta << 4) | type);
    } else {
      buf_ += static_cast<char>(type);
      zigzag(id);
    }
    last_ = id;
  }
  void zigzag(int64_t v) {
    varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      buf_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    buf_ += static_cast<char>(v);
  }
  std::string buf_;
  int16_t last_ = 0;
  std::vector<int16_t> ids_;
};

// parquet.thrift's numbers.
enum : int32_t {
  kTypeInt64 = 2,
  kTypeDouble = 5,
  kTypeByteArray = 6,
  kOptional = 1,
  kConvertedUtf8 = 0,
  kEncodingPlain = 0,
  kEncodingRle = 3,
  kCodecUncompressed = 0,
  kDataPage = 0,
};

int32_t physical(ColumnType t) {
  switch (t) {
    case ColumnType::Int64:
    case ColumnType::TimestampNs:
      return kTypeInt64;
    case ColumnType::Double:
      return kTypeDouble;
    case ColumnType::Text:
      return kTypeByteArray;
  }
  return kTypeByteArray;
}

void put_le32(std::string& s, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);  // little-endian, as Parquet (x86-64, aarch64)
  s.append(b, 4);
}

// Definition levels of a v1 data page: a 4-byte length, then the RLE/bit-packed hybrid; all
// bit-packed here, one bit per row, 8 rows a byte.
std::string definition_levels(const std::vector<uint8_t>& defined) {
  std::string hybrid;
  const uint64_t groups = (defined.size() + 7) / 8;
  for (uint64_t h = (groups << 1) | 1;; h >>= 7) {  // header: groups of 8, bit-packed
    if (h < 0x80) {
      hybrid += static_cast<char>(h);
      break;
    }
    hybrid += static_cast<char>((h & 0x7f) | 0x80);
  }
  for (uint64_t g = 0; g < groups; ++g) {
    uint8_t byte = 0;
    for (int b = 0; b < 8; ++b) {
      const uint64_t i = g * 8 + static_cast<uint64_t>(b);
      if (i < defined.size() && defined[i]) byte |= static_cast<uint8_t>(1u << b);
    }
    hybrid += static_cast<char>(byte);
  }
  std::string out;
  put_le32(out, static_cast<uint32_t>(hybrid.size()));
  return out + hybrid;
}

}  // namespace

Writer::Writer(FILE* out, std::vector<Column> columns)
    : out_(out), columns_(std::move(columns)), chunks_(columns_.size()) {
  write("PAR1");
}

bool Writer::write(const std::string& bytes) {
  if (failed_) return false;
  if (std::fwrite(bytes.data(), 1, bytes.size(), out_) != bytes.size()) failed_ = true;
  offset_ += bytes.size();
  return !failed_;
}

void Writer::null() {
  if (next_ < chunks_.size()) chunks_[next_++].defined.push_back(0);
}

void Writer::int64(int64_t v) {
  if (next_ >= chunks_.size()) return;
  Chunk& c = chunks_[next_];
  const ColumnType t = columns_[next_++].type;
  if (t == ColumnType::Double) {
    const double d = static_cast<double>(v);
    c.values.append(reinterpret_cast<const char*>(&d), 8);
  } else if (t == ColumnType::Text) {
    const std::string s = std::to_string(v);
    put_le32(c.values, static_cast<uint32_t>(s.size()));
    c.values += s;
  } else {
    c.values.append(reinterpret_cast<const char*>(&v), 8);
  }
  c.defined.push_back(1);
}

void Writer::dbl(double v) {
  if (next_ >= chunks_.size()) return;
  Chunk& c = chunks_[next_];
  const ColumnType t = columns_[next_++].type;
  if (t == ColumnType::Text) {
    char b[32];
    const int n = std::snprintf(b, sizeof b, "%.17g", v);
    put_le32(c.values, static_cast<uint32_t>(n));
    c.values.append(b, static_cast<size_t>(n));
  } else if (t == ColumnType::Double) {
    c.values.append(reinterpret_cast<const char*>(&v), 8);
  } else {
    // A REAL in an INTEGER column (only a damaged or crafted file has one): its whole part when
    // it has one, else no value, counted.
    if (!(v >= -9.2e18 && v <= 9.2e18)) {
      ++mismatched_;
      c.defined.push_back(0);
      return;
    }
    const auto i = static_cast<int64_t>(v);
    c.values.append(reinterpret_cast<const char*>(&i), 8);
  }
  c.defined.push_back(1);
}

void Writer::text(const char* s, size_t n) {
  if (next_ >= chunks_.size()) return;
  Chunk& c = chunks_[next_];
  if (columns_[next_++].type != ColumnType::Text) {  // text in a numeric column: no value
    ++mismatched_;
    c.defined.push_back(0);
    return;
  }
  put_le32(c.values, static_cast<uint32_t>(n));
  c.values.append(s, n);
  c.defined.push_back(1);
}

bool Writer::end_row() {
  while (next_ < chunks_.size()) null();  // a short row: the rest NULL
  next_ = 0;
  ++rows_;
  if (++group_rows_ >= kRowGroupRows) return flush_row_group();
  return !failed_;
}

// One column chunk per column: a page header and the data page (definition levels, then the
// values); then the RowGroup struct for the footer.
bool Writer::flush_row_group() {
  if (group_rows_ == 0) return !failed_;
  Thrift group;  // the RowGroup
  group.list(1, Thrift::kStruct, columns_.size());
  uint64_t group_bytes = 0;
  for (size_t i = 0; i < columns_.size(); ++i) {
    Chunk& c = chunks_[i];
    const std::string page = definition_levels(c.defined) + c.values;
    Thrift header;
    header.i32(1, kDataPage);
    header.i32(2, static_cast<int32_t>(page.size()));
    header.i32(3, static_cast<int32_t>(page.size()));
    header.begin_struct(5);
    header.i32(1, static_cast<int32_t>(c.defined.size()));
    header.i32(2, kEncodingPlain);
    header.i32(3, kEncodingRle);
    header.i32(4, kEncodingRle);
    header.end_struct();
    const std::string h = header.done();
    const uint64_t at = offset_;
    if (!write(h) || !write(page)) return false;
    const uint64_t size = h.size() + page.size();
    group_bytes += size;
    group.begin_element();  // ColumnChunk
    group.i64(2, static_cast<int64_t>(at));
    group.begin_struct(3);  // ColumnMetaData
    group.i32(1, physical(columns_[i].type));
    group.list(2, Thrift::kI32, 2);
    group.element_i32(kEncodingPlain);
    group.element_i32(kEncodingRle);
    group.list(3, Thrift::kBinary, 1);
    group.element_binary(columns_[i].name);
    group.i32(4, kCodecUncompressed);
    group.i64(5, static_cast<int64_t>(c.defined.size()));
    group.i64(6, static_cast<int64_t>(size));
    group.i64(7, static_cast<int64_t>(size));
    group.i64(9, static_cast<int64_t>(at));
    group.end_struct();
    group.end_struct();  // the ColumnChunk element
    c.values.clear();
    c.defined.clear();
  }
  group.i64(2, static_cast<int64_t>(group_bytes));
  group.i64(3, static_cast<int64_t>(group_rows_));
  row_groups_ += group.done();  // the RowGroup element, closed
  ++row_group_count_;
  group_rows_ = 0;
  return !failed_;
}

bool Writer::finish() {
  if (!flush_row_group()) return false;
  Thrift meta;  // FileMetaData
  meta.i32(1, 1);
  meta.list(2, Thrift::kStruct, columns_.size() + 1);
  meta.begin_element();  // the root
  meta.binary(4, "schema");
  meta.i32(5, static_cast<int32_t>(columns_.size()));
  meta.end_struct();
  for (const Column& c : columns_) {
    meta.begin_element();
    meta.i32(1, physical(c.type));
    meta.i32(3, kOptional);
    meta.binary(4, c.name);
    if (c.type == ColumnType::Text) meta.i32(6, kConvertedUtf8);
    if (c.type == ColumnType::Text || c.type == ColumnType::TimestampNs) {
      meta.begin_struct(10);  // LogicalType
      if (c.type == ColumnType::Text) {
        meta.begin_struct(1);  // STRING
        meta.end_struct();
      } else {
        meta.begin_struct(8);  // TIMESTAMP
        // isAdjustedToUTC false: readers then keep nanoseconds (DuckDB's TIMESTAMP_NS, pandas'
        // datetime64[ns]); the values are UTC epoch ns all the same (docs/export.md).
        meta.boolean(1, false);
        meta.begin_struct(2);  // unit
        meta.begin_struct(3);  // NANOS
        meta.end_struct();
        meta.end_struct();
        meta.end_struct();
      }
      meta.end_struct();
    }
    meta.end_struct();
  }
  meta.i64(3, static_cast<int64_t>(rows_));
  meta.list(4, Thrift::kStruct, row_group_count_);
  meta.raw(row_groups_);
  meta.binary(6, "gpuwhy " GPUWHY_VERSION);
  const std::string footer = meta.done();
  std::string tail;
  put_le32(tail, static_cast<uint32_t>(footer.size()));
  tail += "PAR1";
  return write(footer) && write(tail) && std::fflush(out_) == 0;
}

}  // namespace gpuwhy::exporter::parquet
