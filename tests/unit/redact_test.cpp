// SPDX-License-Identifier: Apache-2.0
// Secrets in traced command lines beyond the flag rules of reliability_test's Redact test:
// space-separated key values, short password flags of the programs known to take one, header
// values (Authorization: Bearer ...), URL query parameters, and bare tokens by their shape, with
// what must be kept as typed (ports, paths, git shas, model names).
#include <gtest/gtest.h>

#include "store/redact.hpp"
#include "store/secret_token.hpp"

namespace gpuwhy::store {
namespace {

TEST(RedactMore, FlagNamesWithASpaceSeparatedValue) {
  EXPECT_EQ(redact_command_line("app --api-key abc123 --access_key XYZ --epochs 3"),
            "app --api-key *** --access_key *** --epochs 3");
  EXPECT_EQ(redact_command_line("app --pass hunter2 --db-pwd s3cret --auth user:pw --http-auth x"),
            "app --pass *** --db-pwd *** --auth *** --http-auth ***");
  // A key flag followed by a path names the key's file, not the key.
  EXPECT_EQ(redact_command_line("app --private-key /etc/ssl/k.pem --key-file k.pem"),
            "app --private-key /etc/ssl/k.pem --key-file k.pem");
  // Words that only contain the short ones are not secrets.
  EXPECT_EQ(redact_command_line("app --bypass-cache 1 --passes 3 --author me --sort-key name"),
            "app --bypass-cache 1 --passes 3 --author me --sort-key name");
  // A flag after the name is not its value.
  EXPECT_EQ(redact_command_line("app --api-key --verbose"), "app --api-key --verbose");
}

TEST(RedactMore, FlagNamesWithEquals) {
  EXPECT_EQ(redact_command_line("app --pass=hunter2 --pwd=x --auth=y --db_password=z"),
            "app --pass=*** --pwd=*** --auth=*** --db_password=***");
  EXPECT_EQ(redact_command_line("app --passes=3 --auth-type=basic --compass=north"),
            "app --passes=3 --auth-type=basic --compass=north");
}

TEST(RedactMore, ShortPasswordFlagsOnlyWhereTheProgramTakesOne) {
  EXPECT_EQ(redact_command_line("sshpass -p hunter2 ssh -p 2222 host"),
            "sshpass -p *** ssh -p 2222 host");
  EXPECT_EQ(redact_command_line("/usr/bin/mysql -phunter2 -u root db"),
            "/usr/bin/mysql -p*** -u root db");
  EXPECT_EQ(redact_command_line("mysql -p db"), "mysql -p db");  // prompts; db is the database
  EXPECT_EQ(redact_command_line("redis-cli -a hunter2 -p 6379"), "redis-cli -a *** -p 6379");
  // -p elsewhere is a port, "preserve" or "parents": kept.
  EXPECT_EQ(redact_command_line("ssh -p 22 host"), "ssh -p 22 host");
  EXPECT_EQ(redact_command_line("docker run -p 8080:80 img"), "docker run -p 8080:80 img");
  EXPECT_EQ(redact_command_line("mkdir -p /data/ckpt"), "mkdir -p /data/ckpt");
  EXPECT_EQ(redact_command_line("python train.py -p hunter2"), "python train.py -p hunter2");
}

TEST(RedactMore, HeaderValues) {
  EXPECT_EQ(redact_command_line("curl -H Authorization: Bearer abc.def.ghi https://x/y"),
            "curl -H Authorization: Bearer *** https://x/y");
  EXPECT_EQ(redact_command_line("curl --header=Authorization: Basic dXNlcjpwdw== u"),
            "curl --header=Authorization: Basic *** u");
  EXPECT_EQ(redact_command_line("curl -H X-Api-Key: k123 -H Accept: text/plain u"),
            "curl -H X-Api-Key: *** -H Accept: text/plain u");
  // The scheme word after a secret flag is kept, the credential after it hidden.
  EXPECT_EQ(redact_command_line("app --token-type Bearer tok123"), "app --token-type Bearer ***");
  EXPECT_EQ(redact_command_line("app bearer tok123 next"), "app bearer *** next");
}

TEST(RedactMore, UrlQueryParameters) {
  EXPECT_EQ(redact_command_line("wget https://h/f?api_key=abc&x=1&token=t#frag"),
            "wget https://h/f?api_key=***&x=1&token=***#frag");
  EXPECT_EQ(redact_command_line("wget https://h/f?page=2"), "wget https://h/f?page=2");
}

TEST(RedactMore, BareTokensByShape) {
  const std::string ghp = "ghp_" + std::string("aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5");
  EXPECT_EQ(redact_command_line("app " + ghp), "app ***");
  EXPECT_EQ(redact_command_line("app --x=sk-proj-Abc123Def456Ghi789Jkl0"), "app --x=***");
  EXPECT_EQ(redact_command_line("app xoxb-123456789012-abcdefghij AKIAIOSFODNN7EXAMPLE"),
            "app *** ***");
  EXPECT_EQ(redact_command_line("app HF=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"), "app HF=***");
  EXPECT_EQ(redact_command_line(
                "app eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"),
            "app ***");
  EXPECT_EQ(redact_command_line("app Zx9Qw2Er7Ty4Ui1Op8As5Df3Gh6Jk0LmN2bV"), "app ***");
}

TEST(RedactMore, WhatIsKeptAsTyped) {
  for (const std::string s : {
           "git checkout 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",  // a git sha
           "sha256sum e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
           "app --run 123e4567-e89b-12d3-a456-426614174000",  // a UUID
           "python /data/ImageNet2012/Train/ResNet50Weights/V2/checkpoint.pt",
           "app --model Meta-Llama-3-8B-Instruct-Q4_K_M-2024",
           "app --model ResNet50ImageNetPretrainedWeightsV2",
           "app sk-learn ghp_short AKIA1234",
           "app --lr 0.001 --batch-size 256 --resume runs/2024_01_15_ResNet50_lr0001_bs256_Adam",
       }) {
    EXPECT_EQ(redact_command_line(s), s);
  }
}

TEST(RedactMore, TokenShapes) {
  EXPECT_TRUE(looks_like_secret_token("AIzaSyA1B2C3D4E5F6G7H8I9J0K1L2M3N4O5P6Q"));
  EXPECT_TRUE(looks_like_secret_token("glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn"));
  EXPECT_TRUE(looks_like_secret_token("Zx9Qw2Er7Ty4Ui1Op8As5Df3Gh6Jk0LmN2bV=="));
  EXPECT_FALSE(looks_like_secret_token("Zx9Qw2Er7Ty4Ui1Op8As5Df3Gh6Jk0L"));        // 31: too short
  EXPECT_FALSE(looks_like_secret_token("ZX9QW2ER7TY4UI1OP8AS5DF3GH6JK0LMN2BV"));   // one case
  EXPECT_FALSE(looks_like_secret_token("Zx9Q/w2Er7Ty4Ui1Op8As5Df3Gh6Jk0LmN2bV"));  // a path
  EXPECT_FALSE(looks_like_secret_token(""));
}

}  // namespace
}  // namespace gpuwhy::store
