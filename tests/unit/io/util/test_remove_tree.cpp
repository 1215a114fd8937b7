// io::remove_tree, and why it exists: std::filesystem::remove_all, called from lockstep's own
// binaries, binds libtorch.so's exported copy, which calls a libstdc++ 13 function Debian
// 12's libstdc++ lacks (a weak symbol, so address 0) on a non-empty directory. The MPI test
// helper removed a directory an earlier process of the same pid had left that way: a SEGV at
// pc 0 in about 1 of 60 mpi_tests runs (stops 47 and 51; found with a core dump in stop 51).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::fresh_dir;

TEST(RemoveTree, RemovesANestedTreeWithoutFollowingLinks) {
  const std::string root = fresh_dir("remove-tree");
  const std::string outside = root + "-outside";  // a link's target, which must survive
  io::make_dirs(outside + "/kept");
  std::ofstream(outside + "/kept/file") << "kept";
  io::make_dirs(root + "/a/b/c");
  for (const char* f : {"/x", "/a/y", "/a/b/z", "/a/b/c/w"}) std::ofstream(root + f) << "data";
  ASSERT_EQ(::symlink((outside + "/kept").c_str(), (root + "/a/link").c_str()), 0);
  ASSERT_EQ(::mkfifo((root + "/a/b/fifo").c_str(), 0600), 0);
  io::remove_tree(root);
  EXPECT_FALSE(io::path_exists(root));
  EXPECT_TRUE(io::path_exists(outside + "/kept/file")) << "the link was followed";
  io::remove_tree(outside);
  EXPECT_FALSE(io::path_exists(outside));
}

TEST(RemoveTree, AMissingPathOrAPlainFileIsFine) {
  const std::string root = fresh_dir("remove-tree-file");
  EXPECT_NO_THROW(io::remove_tree(root + "/never-made"));
  std::ofstream(root + "/file") << "data";
  io::remove_tree(root + "/file");
  EXPECT_FALSE(io::path_exists(root + "/file"));
}

TEST(RemoveTree, WhatCannotBeRemovedIsNamed) {
  const std::string root = fresh_dir("remove-tree-bad");
  std::ofstream(root + "/file") << "data";
  try {
    io::remove_tree(root + "/file/below");  // a path through a file: ENOTDIR
    ADD_FAILURE() << "no error for a path through a file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot remove " + root + "/file/below: Not a directory"), std::string::npos)
        << e.what();
  }
}
