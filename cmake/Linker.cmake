# LLVM's lld where it is installed (scripts/install-deps.sh installs it): the ~70 test programs
# link static libraries with line tables, about 6 s each with ld.bfd and 1 s with lld, which is
# minutes of every fresh build. -DAIRLOCK_USE_LLD=OFF keeps the system linker.
option(AIRLOCK_USE_LLD "Link with lld when the compiler can use it" ON)
if(AIRLOCK_USE_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=lld" AIRLOCK_HAVE_LLD)
  if(AIRLOCK_HAVE_LLD)
    add_link_options(-fuse-ld=lld)
  endif()
endif()
