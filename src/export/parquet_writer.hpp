// SPDX-License-Identifier: Apache-2.0
// A small Parquet writer for the export (text_export.hpp, --format parquet): flat schemas of
// nullable INT64, DOUBLE, UTF-8 text and TIMESTAMP_NS columns, PLAIN-encoded, uncompressed, one
// data page (v1) per column chunk, a row group per kRowGroupRows rows, the footer in Thrift's
// compact protocol (parquet-format's parquet.thrift). Debian 12 packages no Parquet library (no
// Arrow, no parquet-cpp), and this much of the format is a few hundred lines that DuckDB's and
// pyarrow's readers take as any other file; tests/unit/export_test.cpp reads it with DuckDB.
// Nullable integers stay integers (a definition level per value, not a float NaN), 64-bit
// addresses keep every bit, and `ts` columns are timestamps.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpuwhy::exporter::parquet {

enum class ColumnType : uint8_t { Int64, Double, Text, TimestampNs };

struct Column {
  std::string name;
  ColumnType type = ColumnType::Text;
};

class Writer {
 public:
  // Rows per row group: bounds the memory a table's export holds (tens of MB for api_calls).
  static constexpr uint64_t kRowGroupRows = 262'144;

  Writer(FILE* out, std::vector<Column> columns);

  // One row's values, column by column; every row sets each column once, in order.
  void null();
  void int64(int64_t v);
  void dbl(double v);
  void text(const char* s, size_t n);
  // Ends the row; writes a row group when it is full. False when writing failed.
  bool end_row();
  // The last row group and the footer; false when writing failed.
  bool finish();
  uint64_t rows() const { return rows_; }
  // Values written as NULL because they did not fit their column's type (text in an INTEGER
  // column, a REAL beyond int64): only a damaged or crafted file has them.
  uint64_t mismatched() const { return mismatched_; }

 private:
  struct Chunk {
    std::string values;            // PLAIN: the non-null values
    std::vector<uint8_t> defined;  // one per row: 1 when it has a value
  };
  bool flush_row_group();
  bool write(const std::string& bytes);

  FILE* out_;
  std::vector<Column> columns_;
  std::vector<Chunk> chunks_;
  size_t next_ = 0;  // the column the next value is for
  uint64_t rows_ = 0, group_rows_ = 0, offset_ = 0, mismatched_ = 0;
  std::string row_groups_;  // the footer's RowGroup structs, encoded
  uint32_t row_group_count_ = 0;
  bool failed_ = false;
};

}  // namespace gpuwhy::exporter::parquet
