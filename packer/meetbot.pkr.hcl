# The meetbot bot machine image: Debian 12 with Chromium, ffmpeg, Xvfb, PulseAudio, cloud-init
# and the agent's venv (the scripts of images/), ending with images/selftest.sh in the VM.
#
#   qemu.meetbot           a local qcow2 from images/build-base.sh's base image (or Debian's
#                          official cloud image); `meetbot image build` runs this one
#   amazon-ebs.meetbot     an AMI from Debian's official AMI (operators, AWS credentials)
#   googlecompute.meetbot  a GCE image from Debian's debian-12 family (operators, GCP credentials)
#
# Valid for Debian's packer 1.6.6 without plugins.pkr.hcl; modern Packer runs `packer init`
# first. Select one source with -only, e.g. `packer build -only=amazon-ebs.meetbot packer/`.

locals {
  images_dir = var.images_dir != "" ? var.images_dir : "${path.root}/../images"
  dist_dir   = var.dist_dir != "" ? var.dist_dir : "${path.root}/../dist"
  stamp      = regex_replace(timestamp(), "[-:TZ]", "")
  stage      = "/tmp/meetbot-image"
  labels = {
    meetbot_version = var.meetbot_version
    debian_release  = var.debian_release
  }
}

source "qemu" "meetbot" {
  iso_url          = var.base_image
  iso_checksum     = var.base_image_checksum
  disk_image       = true
  use_backing_file = false
  format           = "qcow2"
  disk_size        = var.disk_size
  disk_interface   = "virtio"
  net_device       = "virtio-net"
  accelerator      = var.accelerator
  cpus             = var.cpus
  memory           = var.memory
  headless         = true
  output_directory = var.output_directory
  vm_name          = "${var.image_name}.qcow2"
  qemuargs = [
    ["-cpu", var.qemu_cpu],
    ["-serial", "file:${var.serial_log}"],
  ]

  # NoCloud seed: cloud-init creates the build user; seal.sh removes it at shutdown.
  cd_files = ["${var.seed_dir}/user-data", "${var.seed_dir}/meta-data"]
  cd_label = "cidata"

  communicator     = "ssh"
  ssh_username     = var.ssh_username
  ssh_password     = var.ssh_password
  ssh_timeout      = var.ssh_timeout
  boot_wait        = "5s"
  shutdown_command = "sudo bash ${local.stage}/images/seal.sh --remove-user ${var.ssh_username} --poweroff"
  shutdown_timeout = "10m"
}

source "amazon-ebs" "meetbot" {
  region        = var.aws_region
  instance_type = var.aws_instance_type
  source_ami_filter {
    filters = {
      name                = "debian-${var.debian_release}-amd64-*"
      architecture        = "x86_64"
      virtualization-type = "hvm"
      root-device-type    = "ebs"
    }
    owners      = [var.aws_source_ami_owner]
    most_recent = true
  }
  launch_block_device_mappings {
    device_name           = "/dev/xvda"
    volume_size           = var.aws_volume_size_gb
    volume_type           = "gp3"
    iops                  = 3000
    throughput            = 125
    delete_on_termination = true
  }
  ssh_username = "admin"
  ami_name     = "${var.image_name}-${var.meetbot_version}-${local.stamp}"
  tags         = merge(local.labels, { Name = var.image_name })
}

source "googlecompute" "meetbot" {
  project_id              = var.gcp_project_id
  zone                    = var.gcp_zone
  machine_type            = var.gcp_machine_type
  source_image_family     = "debian-${var.debian_release}"
  source_image_project_id = ["debian-cloud"]
  disk_size               = var.gcp_disk_size_gb
  image_name              = "${var.image_name}-${local.stamp}"
  image_family            = var.image_name
  image_labels            = { meetbot_version = replace(var.meetbot_version, ".", "-"), debian_release = var.debian_release }
  ssh_username            = "packer"
}

build {
  sources = [
    "source.qemu.meetbot",
    "source.amazon-ebs.meetbot",
    "source.googlecompute.meetbot",
  ]

  provisioner "shell" {
    inline = ["mkdir -p ${local.stage}/images ${local.stage}/dist"]
  }

  provisioner "file" {
    source      = "${local.images_dir}/"
    destination = "${local.stage}/images"
  }

  provisioner "file" {
    source      = "${local.dist_dir}/"
    destination = "${local.stage}/dist"
  }

  # On the natively built base image every step finds its work done; on an official cloud
  # image they install everything (apt, venv, models), which takes long under emulation.
  provisioner "shell" {
    inline = [
      "sudo MEETBOT_DIST_DIR=${local.stage}/dist bash ${local.stage}/images/install.sh",
      "sudo SELFTEST_TIMEOUT=${var.selftest_timeout} bash ${local.stage}/images/selftest.sh",
    ]
  }

  # The clouds stop the instance themselves; the qemu VM seals in its shutdown_command, since
  # sealing removes the user it logged in as.
  provisioner "shell" {
    only   = ["amazon-ebs.meetbot", "googlecompute.meetbot"]
    inline = ["sudo bash ${local.stage}/images/seal.sh"]
  }
}
