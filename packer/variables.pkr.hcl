# Variables of the meetbot bot image. `meetbot image build` sets the local ones (base image,
# seed, dist, output); operators set the cloud ones with -var or a .pkrvars.hcl file.

variable "image_name" {
  type        = string
  default     = "meetbot-bot"
  description = "Name (prefix) of the image: the qcow2 file, the AMI, the GCE image and family."
}

variable "meetbot_version" {
  type        = string
  default     = "0.1.0"
  description = "Version of the meetbot wheel baked in; recorded as a tag/label."
}

variable "debian_release" {
  type        = string
  default     = "12"
  description = "Debian major release of the image (the scripts of images/ target Debian 12)."
}

variable "images_dir" {
  type        = string
  default     = ""
  description = "The repository's images/ folder; empty means ../images beside this template."
}

variable "dist_dir" {
  type        = string
  default     = ""
  description = "Folder with the meetbot wheel and requirements.lock; empty means ../dist."
}

# --- local qcow2 (qemu) ---

variable "base_image" {
  type        = string
  default     = "base.qcow2"
  description = "The image the VM boots: images/build-base.sh's qcow2 (path or file:// URL), or Debian's official cloud image, e.g. https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2."
}

variable "base_image_checksum" {
  type        = string
  default     = "none"
  description = "Checksum of base_image, e.g. sha256:HEX or file:URL-of-SHA512SUMS; none skips the check."
}

variable "accelerator" {
  type        = string
  default     = "tcg"
  description = "qemu accelerator: kvm where /dev/kvm really boots a kernel (meetbot image build probes it), tcg (software emulation) otherwise."
}

variable "qemu_cpu" {
  type        = string
  default     = "Westmere"
  description = "qemu -cpu model: Westmere under tcg (Intel, SSE4.2, no AVX: 'max' reports an AMD CPU and sends CTranslate2's int8 to oneDNN, which emulates pathologically slowly), host under kvm."
}

variable "cpus" {
  type        = number
  default     = 1
  description = "vCPUs of the build VM."
}

variable "memory" {
  type        = number
  default     = 2048
  description = "Memory of the build VM, in MiB."
}

variable "disk_size" {
  type        = string
  default     = "8G"
  description = "Virtual disk size of the image (qemu-img units); at least the base image's."
}

variable "output_directory" {
  type        = string
  default     = "output-meetbot"
  description = "Where the qemu builder writes the image; must not exist yet."
}

variable "seed_dir" {
  type        = string
  default     = "seed"
  description = "Folder with the build's NoCloud user-data and meta-data (meetbot image build writes them); they create ssh_username with ssh_password."
}

variable "ssh_username" {
  type        = string
  default     = "packer"
  description = "The build-time user the seed creates in the qemu VM; removed when the image is sealed."
}

variable "ssh_password" {
  type        = string
  default     = ""
  sensitive   = true
  description = "Its one-build password (meetbot image build makes a random one)."
}

variable "ssh_timeout" {
  type        = string
  default     = "20m"
  description = "How long to wait for the VM's SSH; software emulation boots slowly."
}

variable "selftest_timeout" {
  type        = number
  default     = 1800
  description = "Time limit of each self-test check, in seconds; whisper alone takes many minutes under software emulation."
}

variable "serial_log" {
  type        = string
  default     = "/dev/null"
  description = "File that receives the qemu VM's serial console (its boot log)."
}

# --- Amazon EC2 (amazon-ebs) ---

variable "aws_region" {
  type    = string
  default = "us-east-1"
}

variable "aws_instance_type" {
  type    = string
  default = "t3.medium"
}

variable "aws_volume_size_gb" {
  type    = number
  default = 8
}

variable "aws_source_ami_owner" {
  type        = string
  default     = "136693071363"
  description = "AWS account that publishes Debian's official AMIs."
}

# --- Google Compute Engine (googlecompute) ---

variable "gcp_project_id" {
  type    = string
  default = ""
}

variable "gcp_zone" {
  type    = string
  default = "us-central1-a"
}

variable "gcp_machine_type" {
  type    = string
  default = "e2-standard-2"
}

variable "gcp_disk_size_gb" {
  type    = number
  default = 10
}
