#!/bin/sh
# Installs what the ruby-gc example needs: Debian's ruby (which brings
# WEBrick 1.8 and ERB). Safe to re-run: installs only what is missing.
set -eu
if ! command -v ruby >/dev/null 2>&1 || ! ruby -e 'require "webrick"' 2>/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    # A fresh machine (or container) may have no package lists yet.
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends ruby
fi
ruby -e 'require "webrick"; puts "ruby #{RUBY_VERSION}, webrick #{WEBrick::VERSION}"'
