# Plugins for modern Packer (>= 1.7): run `packer init packer/` once before `packer build`.
# Debian's packer 1.6.6 has these builders built in and rejects this block: leave this file
# out when using it (meetbot image build and scripts/check-images copy the others to a
# temporary folder without it).
packer {
  required_version = ">= 1.7.0"
  required_plugins {
    qemu = {
      version = ">= 1.1.0"
      source  = "github.com/hashicorp/qemu"
    }
    amazon = {
      version = ">= 1.3.0"
      source  = "github.com/hashicorp/amazon"
    }
    googlecompute = {
      version = ">= 1.1.0"
      source  = "github.com/hashicorp/googlecompute"
    }
  }
}
